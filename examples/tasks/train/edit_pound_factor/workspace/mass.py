# How many grams one unit of each kind holds.
TO_GRAMS = {
    "kg": 1000,
    "lb": 450,
    "oz": 28.35,
}


def to_grams(amount, unit):
    """Convert amount of unit into grams."""
    return amount * TO_GRAMS[unit]
