def titlecase(text):
    """Capitalise every word."""
    return " ".join(word.capitalize() for word in text.split())
