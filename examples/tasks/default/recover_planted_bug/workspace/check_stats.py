from stats import mean

got = mean([1, 2, 3])
if got != 2.0:
    raise SystemExit(f"FAIL: mean([1, 2, 3]) returned {got}, expected 2.0 (look at the divisor in stats.py)")
print("OK: mean is right")
