import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from parity import is_even

assert is_even(0) is True
assert is_even(1) is False
assert is_even(-2) is True
assert is_even(-3) is False
assert is_even(10**12 + 1) is False
print("checker passed")
