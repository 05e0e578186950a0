"""dataset stage."""
