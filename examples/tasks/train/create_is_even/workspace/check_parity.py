from parity import is_even

for n, want in [(4, True), (7, False)]:
    got = is_even(n)
    if got is not want:
        raise SystemExit(f"FAIL: is_even({n}) returned {got!r}, expected {want}")
print("OK: is_even works")
