import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from uploads import ALLOWED_EXTENSIONS, is_allowed

assert sorted(ALLOWED_EXTENSIONS) == [".csv", ".md", ".txt"], ALLOWED_EXTENSIONS
assert is_allowed("REPORT.CSV")
assert is_allowed("a.txt") and is_allowed("b.md")
assert not is_allowed("image.png")
assert not is_allowed("csv")
print("checker passed")
