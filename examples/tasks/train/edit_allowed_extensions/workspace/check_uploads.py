from uploads import is_allowed

for name, want in [("data.csv", True), ("notes.txt", True), ("readme.md", True), ("setup.exe", False)]:
    got = is_allowed(name)
    if got != want:
        raise SystemExit(f"FAIL: is_allowed({name!r}) returned {got}, expected {want}")
print("OK: upload types accepted")
