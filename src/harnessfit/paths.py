"""Where harnessfit keeps what it installs and caches (never global folders)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["home", "harness_dir", "models_dir"]


def home() -> Path:
    """Root of harnessfit's own files: ``$HARNESSFIT_HOME`` or ``~/.cache/harnessfit``."""
    env = os.environ.get("HARNESSFIT_HOME")
    root = Path(env) if env else Path.home() / ".cache" / "harnessfit"
    return root.expanduser().resolve()


def harness_dir(name: str, version: str) -> Path:
    """Install folder of one harness version, e.g. ``<home>/harness/pi/0.73.1``."""
    return home() / "harness" / name / version


def models_dir() -> Path:
    """Cache of converted model folders (e.g. the embedded GGUF turned into safetensors)."""
    return home() / "models"
