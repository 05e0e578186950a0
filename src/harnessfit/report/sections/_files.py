"""Copying a run's own files into the report, so the report folder is complete on its own (served or moved)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["copy_in", "MAX_COPY_BYTES"]

MAX_COPY_BYTES = 8 << 20  # larger files (a runaway episode's stream) are named, not copied


def copy_in(files: dict, run_dir: Path, path: Path) -> str | None:
    """Add ``path`` (inside ``run_dir``) to a section's files as ``files/<its path in the run>``; returns that report
    path, or None when the file is missing or larger than ``MAX_COPY_BYTES``."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size > MAX_COPY_BYTES:
        return None
    rel = path.name
    # lexically first: a stage linked into the report's view of a run (``report.locate``) keeps its place there
    for inside, root in (
        (Path(os.path.normpath(path)), Path(os.path.normpath(run_dir))),
        (path.resolve(), run_dir.resolve()),
    ):
        try:
            rel = inside.relative_to(root).as_posix()
            break
        except ValueError:
            continue
    target = f"files/{rel}"
    files[target] = path
    return target
