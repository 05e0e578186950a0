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
from harnessfit.tasks.family import Family, TaskDraft, write_task

__all__ = ["generate_tasks", "per_kind_counts", "MAX_ATTEMPTS"]
MAX_ATTEMPTS = 60


def _identity(draft: TaskDraft) -> str:
    """Two instances are one task when they ask the same thing: the prompt names a task (the golden solver and the
    RL environment find a task by its prompt), so no two instances of a suite may share one."""
    return hashlib.sha256(draft.prompt.strip().encode()).hexdigest()


def _draw(fam: Family, seed: int, k: int, seen: set[str]) -> TaskDraft:
    for attempt in range(MAX_ATTEMPTS):
        draft = fam.build(random.Random(f"{seed}:{fam.name}:{k}:{attempt}"))
        key = _identity(draft)
        if key not in seen:
            seen.add(key)
            return draft
    raise UserError(
        f"task family {fam.name} gave only {k} distinct instances under seed {seed} "
        f"({MAX_ATTEMPTS} draws in a row repeated one); ask for fewer with --n"
    )


def per_kind_counts(families: Sequence[Family], per_kind: int) -> dict[str, int]:
    """Instances per family so that each kind (edit / recover / create) gets ``per_kind`` in all, spread evenly over
    its families (the first ones get one more where it does not divide): a kind with many families — there are
    more edit families than create ones — must not outweigh the others in what a model is trained on."""
    counts: dict[str, int] = {}
    for kind in sorted({f.kind for f in families}):
        members = [f for f in families if f.kind == kind]
        base, extra = divmod(per_kind, len(members))
        for i, fam in enumerate(members):
            counts[fam.name] = base + (1 if i < extra else 0)
    return counts


def generate_tasks(
    families: Sequence[Family],
    out: Path,
    *,
    n: int | dict[str, int],
    seed: int = 0,
    check: bool = True,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Write ``n`` instances of each family (or ``n[family]``, e.g. from ``per_kind_counts``) under ``out``
    (``<family>-<seed>-<k>/``) and ``out/tasks.json``."""
    counts = n if isinstance(n, dict) else {f.name: n for f in families}
    if min(counts.values(), default=0) < 1 and not isinstance(n, dict):
        raise UserError(f"--n must be at least 1 (got {n})")
    families = [f for f in families if counts.get(f.name, 0) > 0]
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not force:
            raise UserError(f"{out} is not empty: give a new folder, or --force to replace it")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for fam in families:
        for k in range(counts[fam.name]):
            draft = _draw(fam, seed, k, seen)
            task_id = f"{fam.name}-{seed}-{k:04d}"
            task = write_task(draft, out / task_id)
            if check:
                try:
                    check_task(task)
                except TaskProblem as exc:
                    raise UserError(f"generated task is not sound (a bug in family {fam.name}): {exc}") from exc
            rows.append(
                {
                    "id": task_id,
                    "family": fam.name,
                    "split": fam.split,
                    "kind": fam.kind.value,
                    "fingerprint": task.fingerprint(),
                }
            )
        if progress:
            progress(f"{fam.name}: {counts[fam.name]} task(s) ({fam.split}, {fam.kind.value})")
    manifest = {
        "stage": "tasks",
        "seed": seed,
        "n": n,
        "checked": check,
        "families": {f.name: {"split": f.split, "kind": f.kind.value, "count": counts[f.name]} for f in families},
        "tasks": rows,
    }
    (out / SUITE_MANIFEST).write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
    return manifest
