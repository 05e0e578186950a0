"""What the agent's container changed outside its working folder, carried into the verifier's fresh container.

Harbor runs ``tests/test.sh`` in the agent's own container, so a task may have its solution write anywhere —
``sokoban-from-image`` writes ``/output/state.json``. Here the verifier runs in a fresh container of the same image
(the policy never reaches what it is scored from), so after the agent stopped its container's changes are listed
(``podman diff`` / ``docker diff``) and those outside the places below are copied out (``carry_out``), then copied
into the verifier's container before it starts (``carry_in``; ``/tests`` and ``/logs/verifier`` are bound over
them afterwards, so nothing carried can stand in for either). Not carried, and why:

* system paths (``/usr`` — with ``/usr/local`` —, ``/bin``, ``/sbin``, ``/lib*``, ``/etc``, ``/var``, ``/proc``,
  ``/sys``, ``/dev``, ``/run``, ``/boot``) and the home folders ``/root``, ``/home``: a planted ``python3``,
  ``pytest``, ``sitecustomize``, user site-packages or shell rc file there would run in the verifier;
* ``/tests``, ``/logs``, ``/solution`` and the runner's ``/hf``: the verifier's own, made fresh;
* the working folder (carried as it is, bound in) and every folder bound into the agent's container;
* deletions: a file of the image the agent deleted outside the working folder is still there for the verifier
  (the result lists such paths under ``not carried``).

``/tmp`` is carried (Harbor's verifier would see it, and nothing runs from it unasked), as is any other folder —
``/output``, ``/opt``, ``/srv`` — up to ``CARRY_LIMIT`` bytes in all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from harnessfit.eval.backends.host import RUNNER_PATHS, SYSTEM_PATHS, under
from harnessfit.eval.images import ContainerEngine

__all__ = ["CARRY_LIMIT", "carry_out", "carry_in", "carried_roots"]

CARRY_LIMIT = 256 << 20


def _size(path: Path) -> int:
    total = 0
    for base, _dirs, files in os.walk(path):
        total += sum(os.lstat(os.path.join(base, f)).st_size for f in files)
    return total


def carried_roots(changed: list[str], deleted: list[str], protected: list[str]) -> tuple[list[str], list[str]]:
    """(the top-most changed paths to carry, the deletions not reproduced) from a container's diff.

    ``protected`` are the working folder and every bind destination: neither they, what is under them, nor their
    parent folders are carried (a parent would drag them along). Nor is an entry directly in ``/`` with nothing
    changed under it (a file such as ``/pytest.ini`` or ``/conftest.py``): ``/`` is an ancestor of ``/tests``, so
    pytest would read it as the verifier's configuration — the agent must not reach what it is scored from."""

    folders = {p.rsplit("/", 1)[0] for p in changed}

    def allowed(path: str) -> bool:
        if path == "/" or under(path, [*SYSTEM_PATHS, *RUNNER_PATHS, *protected]):
            return False
        if path.count("/") == 1 and path not in folders:  # an entry of its own in "/" (e.g. /pytest.ini,
            return False  # /conftest.py): "/" is an ancestor of /tests, whose tools read config from there
        return not any(under(p, [path]) for p in protected)

    roots: list[str] = []
    for path in sorted(p for p in set(changed) if allowed(p)):
        if not under(path, roots):
            roots.append(path)
    return roots, sorted(p for p in deleted if allowed(p))


def _diff(engine: ContainerEngine, name: str) -> dict[str, list[str]]:
    proc = subprocess.run(
        engine.cmd("diff", "--format", "json", name),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    if proc.returncode == 0:
        data = json.loads(proc.stdout or "{}")
        return {k: list(data.get(k) or []) for k in ("added", "changed", "deleted")}
    proc = subprocess.run(
        engine.cmd("diff", name), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300
    )  # docker: "A /path" lines
    if proc.returncode != 0:
        raise RuntimeError(f"{engine.name} diff failed: {proc.stderr.strip()[-300:]}")
    out: dict[str, list[str]] = {"added": [], "changed": [], "deleted": []}
    kinds = {"A": "added", "C": "changed", "D": "deleted"}
    for line in proc.stdout.splitlines():
        kind, _, path = line.partition(" ")
        if kind in kinds and path.startswith("/"):
            out[kinds[kind]].append(path)
    return out


def carry_out(engine: ContainerEngine, name: str, protected: list[str], dest: Path) -> dict[str, Any]:
    """Copy what the stopped container ``name`` changed outside ``protected`` and the system paths into ``dest``
    (at the same paths under it); the record of what was and was not carried."""
    diff = _diff(engine, name)
    roots, deleted = carried_roots(diff["added"] + diff["changed"], diff["deleted"], protected)
    carried, skipped, used = [], [], 0
    for root in roots:
        target = dest / root.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            engine.cmd("cp", f"{name}:{root}", str(target)),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=600,
        )
        if proc.returncode != 0:
            skipped.append(f"{root} ({proc.stderr.strip()[-120:] or 'cp failed'})")
            continue
        size = _size(target) if target.is_dir() else target.lstat().st_size
        if used + size > CARRY_LIMIT:
            shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
            skipped.append(f"{root} (over the {CARRY_LIMIT >> 20} MiB carried in all)")
            continue
        used += size
        carried.append(root)
    return {"carried": carried, "not carried": skipped + [f"{p} (deleted by the agent)" for p in deleted]}


def carry_in(engine: ContainerEngine, name: str, src: Path) -> None:
    """Copy the carried tree ``src`` into the created (not yet started) container ``name`` at ``/``."""
    if not src.is_dir() or not any(src.iterdir()):
        return
    proc = subprocess.run(
        engine.cmd("cp", f"{src}/.", f"{name}:/"), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{engine.name} cp into the verifier failed: {proc.stderr.strip()[-300:]}")
