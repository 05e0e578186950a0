import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

import json

with open("settings.json", encoding="utf-8") as fh:
    assert json.load(fh) == {"mode": "fast"}
from app import load_mode

assert load_mode() == "fast"
print("checker passed")
