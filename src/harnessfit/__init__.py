"""harnessfit: teach small open models to work as coding agents inside one agent harness."""

__version__ = "0.1.0"
