def shelf_label(aisle, shelf):
    """Label such as "B7" for aisle "B" (a letter) and shelf 7 (an int)."""
    return aisle + shelf
