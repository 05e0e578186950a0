import json

with open("settings.json", encoding="utf-8") as fh:
    assert json.load(fh) == {"mode": "fast"}
from app import load_mode

assert load_mode() == "fast"
print("checker passed")
