"""Resumable run state of ``train rl``: after every step ``OUT/state/`` holds the adapter, the optimizer, the step
and the RNG states, replaced atomically (written beside, then renamed), so a kill -9 at any moment leaves either
the previous step's state or this one's. ``--resume`` continues after the saved step; the per-step logs
(``metrics.jsonl``, ``episodes.jsonl``) are cut back to it so each curve stays single, and what a step cut short by
the kill left — its episodes' capture files (the capture appends, so the rerun's turns would join them) and its
episode folders — is removed.
"""

from __future__ import annotations

import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import torch

from harnessfit.errors import UserError

__all__ = ["STATE", "save_state", "load_state", "trim_logs", "trim_steps", "refuse_or_resume"]

STATE = "state"
LOGS = ("metrics.jsonl", "episodes.jsonl")
_CAPTURE_STEP = re.compile(r"^s(\d+)-")  # an episode's capture file: train.rl.rollout.episode_name, s<step>-<task>-g<g>
_ROLLOUT_STEP = re.compile(r"^step-(\d+)$")


def save_state(out_dir: Path, step: int, model: Any, optimizer: Any) -> None:
    """Write the state after ``step`` (the ``default`` adapter only)."""
    tmp, final, old = out_dir / f"{STATE}.tmp", out_dir / STATE, out_dir / f"{STATE}.old"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(str(tmp / "adapter"), selected_adapters=["default"])
    torch.save(
        {"optimizer": optimizer.state_dict(), "torch_rng": torch.get_rng_state(), "python_rng": random.getstate()},
        tmp / "optimizer.pt",
    )
    (tmp / "state.json").write_bytes(orjson.dumps({"step": step}))
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)
    shutil.rmtree(old, ignore_errors=True)


def load_state(out_dir: Path) -> tuple[int, Path, dict[str, Any]] | None:
    """(step, adapter folder, optimizer + RNG dict) of the saved state, or None. A kill between the two renames of
    ``save_state`` leaves only ``state.old``: that one is used."""
    for name in (STATE, f"{STATE}.old"):
        folder = out_dir / name
        if (folder / "state.json").is_file() and (folder / "optimizer.pt").is_file():
            step = int(orjson.loads((folder / "state.json").read_bytes())["step"])
            extra = torch.load(folder / "optimizer.pt", weights_only=False)
            return step, folder / "adapter", extra
    return None


def trim_logs(out_dir: Path, step: int) -> None:
    """Drop the log rows of steps after ``step`` (a step killed half-way runs again)."""
    for name in LOGS:
        path = out_dir / name
        if not path.is_file():
            continue
        keep = [ln for ln in path.read_bytes().splitlines() if ln.strip() and orjson.loads(ln).get("step", 0) <= step]
        path.write_bytes(b"".join(ln + b"\n" for ln in keep))


def trim_steps(out_dir: Path, step: int) -> None:
    """Remove the capture files and episode folders of the steps after ``step`` (a step killed half-way)."""
    for path in (out_dir / "capture").glob("*.jsonl"):
        if (m := _CAPTURE_STEP.match(path.stem)) and int(m.group(1)) > step:
            path.unlink()
    rollouts = out_dir / "rollouts"
    for folder in rollouts.iterdir() if rollouts.is_dir() else ():
        if (m := _ROLLOUT_STEP.match(folder.name)) and int(m.group(1)) > step:
            shutil.rmtree(folder)


def refuse_or_resume(out_dir: Path, resume: bool) -> tuple[int, Path, dict[str, Any]] | None:
    """The state to resume from (``--resume``), or None for a fresh start; a fresh start in a folder holding a
    state is refused, so a finished or interrupted run is never overwritten by mistake."""
    found = load_state(out_dir)
    if found is not None and not resume:
        raise UserError(
            f"{out_dir} holds the state of a train rl run (step {found[0]}): pass --resume to continue, "
            "or choose another --out"
        )
    if found is None:
        for name in LOGS:
            (out_dir / name).unlink(missing_ok=True)
        return None
    trim_logs(out_dir, found[0])
    trim_steps(out_dir, found[0])
    return found
