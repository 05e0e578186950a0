def slugify(title):
    """Lower-case the title and join its words with hyphens."""
    slug = "-".join(title.lower().split())
