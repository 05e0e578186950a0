from labels import shelf_label

got = shelf_label("B", 7)
if got != "B7":
    raise SystemExit(f"FAIL: shelf_label('B', 7) returned {got!r}, expected 'B7'")
print("OK: shelf labels render")
