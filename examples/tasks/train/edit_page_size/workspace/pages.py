def paginate(items, page_size=10):
    """Split items into consecutive pages of at most page_size items."""
    return [items[start:start + page_size] for start in range(0, len(items), page_size)]
