"""Freeze the package source for the length of one benchmark invocation.

The benches start several subprocesses minutes apart (1 worker, then 2 workers, then a larger corpus). If the
source tree changes in between (someone is editing ``src/``), two runs would measure different code and an
"identical output for 1 and 2 workers" check could fail for a reason that has nothing to do with workers. So each
bench copies ``src/harnessfit`` once into a temporary folder and puts it first on ``PYTHONPATH`` for its child
processes (and for itself); the JSON reports the snapshot's hash so two reports can be matched to the same code.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

__all__ = ["freeze_source"]

SRC = Path(__file__).resolve().parents[1] / "src"


def freeze_source(tmp: Path) -> dict:
    """Copy ``src/harnessfit`` under ``tmp`` and point this process and its children at the copy.

    Returns ``{"source_sha256": …, "path": …}`` (hash over every ``.py`` file's relative path and bytes)."""
    dest = tmp / "src"
    shutil.copytree(SRC / "harnessfit", dest / "harnessfit",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    h = hashlib.sha256()
    for p in sorted((dest / "harnessfit").rglob("*.py")):
        h.update(p.relative_to(dest).as_posix().encode() + b"\0" + p.read_bytes())
    os.environ["PYTHONPATH"] = os.pathsep.join([str(dest), *filter(None, [os.environ.get("PYTHONPATH")])])
    sys.path.insert(0, str(dest))
    for name in [m for m in sys.modules if m == "harnessfit" or m.startswith("harnessfit.")]:
        del sys.modules[name]
    return {"source_sha256": h.hexdigest()[:16], "path": str(dest)}
