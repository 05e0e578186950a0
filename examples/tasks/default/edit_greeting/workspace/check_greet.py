from greet import greet

got = greet("Ada")
if got != "Hi, Ada!":
    raise SystemExit(f"FAIL: greet('Ada') returned {got!r}, expected 'Hi, Ada!'")
print("OK: greet works")
