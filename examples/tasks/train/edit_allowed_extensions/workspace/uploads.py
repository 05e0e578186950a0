# File types the upload form accepts.
ALLOWED_EXTENSIONS = [".txt", ".md"]


def is_allowed(filename):
    """True when filename ends with one of ALLOWED_EXTENSIONS (any case)."""
    return any(filename.lower().endswith(ext) for ext in ALLOWED_EXTENSIONS)
