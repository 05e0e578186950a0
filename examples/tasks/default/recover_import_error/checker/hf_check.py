import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

import pathlib

from report import heading

assert heading("weekly report") == "Weekly Report\n============="
assert "def titlecase" in pathlib.Path("textutils.py").read_text()
print("checker passed")
