"""CLI commands of the tokens stage (thin: parse options, call the stage's public functions, print)."""

from __future__ import annotations

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
