from csvline import parse_line

got = parse_line("name, age ,city")
if got != ["name", "age", "city"]:
    raise SystemExit(f"FAIL: parse_line('name, age ,city') returned {got!r}, expected ['name', 'age', 'city']")
print("OK: parse_line works")
