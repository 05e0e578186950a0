import pathlib

if not pathlib.Path("settings.json").is_file():
    raise SystemExit('FAIL: settings.json is missing; create it holding {"mode": "fast"}')

from app import load_mode

mode = load_mode()
if mode != "fast":
    raise SystemExit(f"FAIL: load_mode() returned {mode!r}, expected 'fast'")
print("OK: app settings load")
