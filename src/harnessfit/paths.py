"""Where harnessfit keeps what it installs and caches (never global folders)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["home", "harness_dir", "models_dir", "file_lock"]


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


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing): one installer or converter at a time, across
    processes (pytest-xdist workers, two CLI runs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
