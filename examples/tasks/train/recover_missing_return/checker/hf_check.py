import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from slug import slugify

assert slugify("  Hello World ") == "hello-world"
assert slugify("Release Notes  2024") == "release-notes-2024"
assert slugify("single") == "single"
assert slugify("") == ""
print("checker passed")
