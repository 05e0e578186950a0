import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from labels import shelf_label

assert shelf_label("B", 7) == "B7"
assert shelf_label("A", 12) == "A12"
assert shelf_label("C", 0) == "C0"
print("checker passed")
