ITEMS = [("coffee", 3.50), ("bagel", 2.25), ("juice", 4.00)]

for name, price in ITEMS:
    print(f"{name:<8}{price:>6.2f}")
print(f"{'Sum':<8}{sum(price for _, price in ITEMS):>6.2f}")
