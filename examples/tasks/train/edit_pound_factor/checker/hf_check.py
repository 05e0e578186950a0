import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

from mass import TO_GRAMS, to_grams

assert abs(to_grams(1, "lb") - 453.592) < 1e-12, to_grams(1, "lb")
assert abs(to_grams(10, "lb") - 4535.92) < 1e-9, to_grams(10, "lb")
assert TO_GRAMS["kg"] == 1000, TO_GRAMS
assert TO_GRAMS["oz"] == 28.35, TO_GRAMS
assert sorted(TO_GRAMS) == ["kg", "lb", "oz"], sorted(TO_GRAMS)
print("checker passed")
