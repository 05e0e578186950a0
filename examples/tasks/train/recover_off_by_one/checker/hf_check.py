import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from squares import squares_upto

assert squares_upto(4) == [1, 4, 9, 16]
assert squares_upto(1) == [1]
assert squares_upto(0) == []
assert squares_upto(6)[-1] == 36
print("checker passed")
