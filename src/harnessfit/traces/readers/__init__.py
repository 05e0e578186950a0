"""traces/readers stage."""
