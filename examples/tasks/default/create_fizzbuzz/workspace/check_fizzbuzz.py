from fizzbuzz import fizzbuzz

got = fizzbuzz(5)
if got != ["1", "2", "Fizz", "4", "Buzz"]:
    raise SystemExit(f"FAIL: fizzbuzz(5) returned {got!r}")
print("OK: fizzbuzz works")
