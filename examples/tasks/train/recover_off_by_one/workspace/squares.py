def squares_upto(n):
    """Squares of 1, 2, ..., n (n included)."""
    return [i * i for i in range(1, n)]
