"""Recorded trajectories: scripted solvers run through the real Pi, their Pi session files kept as training input.

``synth`` plays the golden solver on every task x seed (sessions that show read → edit → validate, recover after
a failing validation, create-and-validate that ends promptly) and, as contrast examples, the recovering solver
(its first call's arguments are a JSON string of the object: Pi rejects it with its validation error, and the
session shows the corrected call and the rest of the solution). Only episodes whose loop completed are kept; the
manifest lists every file with its SHA-256 and every skipped episode with why. A kept session names
``/workspace/<task>/seed-<n>`` as its working folder instead of the folder the episode ran in, so the dataset built
from it does not depend on where the project was cloned.

`harnessfit build` rejects the contrast sessions as ``arguments_double_encoded`` (Pi stores the string it parsed,
and a refused call must never become an SFT label); they are there for preference/RL pairs and for the ledger.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from harnessfit.errors import UserError
from harnessfit.eval.episode import UNSCORING_FLAGS, Episode
from harnessfit.eval.run import run_eval
from harnessfit.core.jsonio import sha256_file
from harnessfit.harness.pi import DEFAULT_PI_VERSION, installed_package
from harnessfit.harness.versions import harness_spec

__all__ = ["synth", "SYNTH_KINDS", "WORKSPACE_ROOT"]

SYNTH_KINDS = {"golden": "scripted:golden", "contrast": "scripted:recovering"}
WORKSPACE_ROOT = "/workspace"  # the working folder a kept session names, whatever folder the episode ran in


def _copy_session(src: Path, dst: Path, workspace: str) -> None:
    """Copy a Pi session file, naming ``workspace`` instead of the episode's real working folder (the header's
    ``cwd`` and any other mention of that folder). The build groups a session without a repository by its working
    folder, so a real path (under the project's clone, perhaps ``/home/<user>``) would make the dataset's groups,
    splits and redactions depend on where the project lives."""
    data = src.read_bytes()
    lines = data.split(b"\n", 1)
    header = orjson.loads(lines[0])
    real = header.get("cwd")
    if header.get("type") != "session" or not isinstance(real, str) or not real:
        raise UserError(f"{src}: not a Pi session file (its first line has no session header with a cwd)")
    header["cwd"] = workspace
    rest = lines[1] if len(lines) > 1 else b""
    old, new = orjson.dumps(real)[1:-1], orjson.dumps(workspace)[1:-1]  # as they appear inside JSON strings
    dst.write_bytes(orjson.dumps(header) + b"\n" + rest.replace(old, new))


def synth(
    suite_dir: Path,
    out_dir: Path,
    *,
    seeds: int = 1,
    workers: int = 2,
    contrast: bool = True,
    pi_version: str = DEFAULT_PI_VERSION,
    progress: bool = True,
    on_episode: Callable[[Episode], None] | None = None,
) -> dict[str, Any]:
    """Write ``out_dir/sessions/{golden,contrast}/<task>-s<seed>.jsonl`` (real Pi v3 sessions) + ``manifest.json``."""
    out_dir = Path(out_dir)
    kinds = {k: v for k, v in SYNTH_KINDS.items() if contrast or k == "golden"}
    files: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for kind, model in kinds.items():
        run_dir = out_dir / "runs" / kind
        results = run_eval(model, suite_dir, run_dir, seeds=seeds, workers=workers, pi_version=pi_version,
                           progress=progress, on_episode=on_episode)
        target = out_dir / "sessions" / kind
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for ep in results.episodes:
            f, m = ep.facts, ep.metrics
            name = f"{f.task_id}-s{f.seed}.jsonl"
            if m is None or not m.complete_loop or f.session_file is None or m.integrity_flag in UNSCORING_FLAGS:
                why = f.error if m is None else (m.integrity_flag if m.integrity_flag in UNSCORING_FLAGS
                                                 else m.failure or "no session file")
                skipped.append({"kind": kind, "task": f.task_id, "seed": f.seed, "reason": why})
                continue
            dst = target / name
            _copy_session(run_dir / f.session_file, dst, f"{WORKSPACE_ROOT}/{f.task_id}/seed-{f.seed}")
            files.append({"path": dst.relative_to(out_dir).as_posix(), "kind": kind, "task": f.task_id,
                          "seed": f.seed, "sha256": sha256_file(dst),
                          "double_encoded_calls": m.double_encoded_arguments})
    if not files:
        raise UserError(f"synth produced no sessions for {suite_dir} (every episode failed; see {out_dir}/runs)")
    manifest = {"stage": "synth", "suite": str(suite_dir), "seeds": seeds, "pi_version": pi_version,
                "harness": harness_spec(pi_version), "pi_package": installed_package(pi_version),
                "files": sorted(files, key=lambda r: r["path"]), "skipped": skipped}
    (out_dir / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
    return manifest
