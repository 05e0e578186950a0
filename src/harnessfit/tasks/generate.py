"""``harnessfit tasks generate``: N distinct instances per family, one task folder each, and a manifest.

Instance ``k`` of family ``F`` under seed ``S`` is drawn from ``random.Random("S:F:k:a")`` (``a`` counts attempts):
the same seed gives the same folders byte for byte. Two instances are the same task when their prompts are equal (a
prompt names its task); a repeat is drawn again, and a family that cannot give N distinct instances is a one-line error
naming how many it gave. Every instance is checked (``tasks.check``) unless asked not to.

``tasks.json`` beside the folders records each instance's family and split; ``eval.task.suite_families`` reads it,
so the synthesis stage can refuse held-out families (they are what a tuned model is measured on, never trained on).
"""

from __future__ import annotations

import hashlib
import random
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from harnessfit.errors import UserError
from harnessfit.eval.task import SUITE_MANIFEST
from harnessfit.tasks.check import TaskProblem, check_task
from harnessfit.tasks.family import Draft, Family, write_task

__all__ = ["generate_tasks", "MAX_ATTEMPTS"]
MAX_ATTEMPTS = 60


def _identity(draft: Draft) -> str:
    """Two instances are one task when they ask the same thing: the prompt names a task (the golden solver and the
    RL environment find a task by its prompt), so no two instances of a suite may share one."""
    return hashlib.sha256(draft.prompt.strip().encode()).hexdigest()


def _draw(fam: Family, seed: int, k: int, seen: set[str]) -> Draft:
    for attempt in range(MAX_ATTEMPTS):
        draft = fam.build(random.Random(f"{seed}:{fam.name}:{k}:{attempt}"))
        key = _identity(draft)
        if key not in seen:
            seen.add(key)
            return draft
    raise UserError(f"task family {fam.name} gave only {k} distinct instances under seed {seed} "
                    f"({MAX_ATTEMPTS} draws in a row repeated one); ask for fewer with --n")


def generate_tasks(families: Sequence[Family], out: Path, *, n: int, seed: int = 0, check: bool = True,
                   force: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Write ``n`` instances of each family under ``out`` (``<family>-<seed>-<k>/``) and ``out/tasks.json``."""
    if n < 1:
        raise UserError(f"--n must be at least 1 (got {n})")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not force:
            raise UserError(f"{out} is not empty: give a new folder, or --force to replace it")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for fam in families:
        for k in range(n):
            draft = _draw(fam, seed, k, seen)
            task_id = f"{fam.name}-{seed}-{k:04d}"
            task = write_task(draft, out / task_id)
            if check:
                try:
                    check_task(task)
                except TaskProblem as exc:
                    raise UserError(f"generated task is not sound (a bug in family {fam.name}): {exc}") from exc
            rows.append({"id": task_id, "family": fam.name, "split": fam.split, "kind": fam.kind.value,
                         "fingerprint": task.fingerprint()})
        if progress:
            progress(f"{fam.name}: {n} task(s) ({fam.split}, {fam.kind.value})")
    manifest = {"stage": "tasks", "seed": seed, "n": n, "checked": check,
                "families": {f.name: {"split": f.split, "kind": f.kind.value, "count": n} for f in families},
                "tasks": rows}
    (out / SUITE_MANIFEST).write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
    return manifest
