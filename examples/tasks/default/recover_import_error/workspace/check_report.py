from report import heading

got = heading("weekly report")
if got != "Weekly Report\n=============":
    raise SystemExit(f"FAIL: heading returned {got!r}")
print("OK: report heading renders")
