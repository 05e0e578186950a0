def km_to_miles(km):
    """Kilometres to miles."""
    return km * 0.62
