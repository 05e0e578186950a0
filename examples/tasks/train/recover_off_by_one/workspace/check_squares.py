from squares import squares_upto

got = squares_upto(4)
if got != [1, 4, 9, 16]:
    raise SystemExit(f"FAIL: squares_upto(4) returned {got}, expected [1, 4, 9, 16] (is n itself included?)")
print("OK: squares include n")
