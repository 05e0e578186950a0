from mass import to_grams

got = to_grams(2, "lb")
if abs(got - 907.184) > 1e-9:
    raise SystemExit(f"FAIL: to_grams(2, 'lb') returned {got}, expected 907.184")
if to_grams(1, "kg") != 1000:
    raise SystemExit("FAIL: the kg factor must stay 1000")
print("OK: pound factor is precise")
