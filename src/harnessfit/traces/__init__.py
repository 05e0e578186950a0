"""traces stage."""
