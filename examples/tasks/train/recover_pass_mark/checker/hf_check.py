import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

import grading

assert grading.PASS_MARK == 50, grading.PASS_MARK
assert grading.passed(50) is True
assert grading.passed(49.5) is False
assert grading.passed(100) is True
assert grading.passed(0) is False
print("checker passed")
