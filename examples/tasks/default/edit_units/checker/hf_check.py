import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from units import km_to_miles

assert abs(km_to_miles(10) - 6.21371) < 1e-9
assert abs(km_to_miles(1) - 0.621371) < 1e-12
print("checker passed")
