import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from stats import mean

assert mean([1, 2, 3]) == 2.0
assert mean([4]) == 4.0
assert mean([1, 2]) == 1.5
print("checker passed")
