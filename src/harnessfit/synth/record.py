"""Recorded trajectories: scripted solvers run through the real Pi, their Pi session files kept as training input.

``synth`` plays the golden solver on every task x seed (sessions that show read → edit → validate, recover after
a failing validation, create-and-validate that ends promptly) and, as contrast examples, the recovering solver
(its first call's arguments are a JSON string of the object: Pi rejects it with its validation error, and the
session shows the corrected call and the rest of the solution). With ``retry``, every task with an edit is also
played by the mis-edit solver: its first edit goes wrong as a small model's edits do (nothing changed, or text not
found), Pi says so, the next call reads the file again and the one after it is the exact edit; a task that creates
a file instead first sends the new file to ``edit``, Pi says it cannot edit a file that is not there, and the next
call is the write. The kept copy marks the failed edit context only (``formats.pi.entries.CONTEXT_ONLY_ENTRY``), so
the build learns what follows the error and never the mistake. With ``second_try``, every task whose golden plan
has a decoy is also played by the second-try solver: its first change applies but is wrong (the decoy), the
validation fails, the next calls read the file and repair exactly the wrong lines; the decoy is marked context only
the same way, so the labels are the validation, the re-read and the repair.

Only episodes whose loop completed are kept; the manifest lists every file with its SHA-256 and every skipped
episode with why. A kept session names ``/workspace/<task>/seed-<n>`` as its working folder instead of the folder
the episode ran in, so the dataset built from it does not depend on where the project was cloned, and its ids and
timestamps are pinned (``synth.session_copy``), so the same tasks synthesised on the same day give the same bytes.

A refused call is never an SFT label. Under a Pi that stores the refused text as ``argumentsError`` and whose card
has its refusal (1.6.0), `harnessfit build` keeps a contrast session with that first turn as context only
(``ConversationMeta.context_only``): the retry and the rest are labels, learnt after Pi's refusal. Under older
targets the session is rejected as ``arguments_double_encoded`` and serves preference/RL pairs and the ledger.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from harnessfit.core.jsonio import read_jsonl, sha256_file
from harnessfit.errors import UserError
from harnessfit.eval.episode import UNSCORING_FLAGS, Episode
from harnessfit.eval.run import run_eval
from harnessfit.eval.scripted_models import decoy_step, planted_step
from harnessfit.eval.task import Task, load_suite, suite_families
from harnessfit.harness.pi import DEFAULT_PI_VERSION, installed_package
from harnessfit.harness.versions import harness_spec
from harnessfit.synth.session_copy import copy_session

__all__ = ["synth", "SYNTH_KINDS", "WORKSPACE_ROOT", "failed_edit", "first_change"]

SYNTH_KINDS = {
    "golden": "scripted:golden",
    "contrast": "scripted:recovering",
    "retry": "scripted:mis-edit",
    "second-try": "scripted:second-try",
}
CHUNK = 48  # tasks per eval run: what a kill can lose
WORKSPACE_ROOT = "/workspace"  # the working folder a kept session names, whatever folder the episode ran in


def _same_run(path: Path, spec: dict[str, Any], resume: bool) -> None:
    """A resumed run must be the run it continues (same suite, seeds, contrast and Pi): its ledger means nothing
    for another one."""
    if resume and path.is_file():
        before = orjson.loads(path.read_bytes())
        changed = sorted(k for k in spec if before.get(k) != spec[k])
        if changed:
            raise UserError(
                f"--resume continues the run in {path.parent}, which had other "
                f"{', '.join(f'{k} ({before.get(k)!r})' for k in changed)}: choose a new --out"
            )
    path.write_bytes(orjson.dumps(spec, option=orjson.OPT_INDENT_2) + b"\n")


def _next_part(kind_dir: Path) -> Path:
    return kind_dir / f"part-{len(list(kind_dir.glob('part-*'))) if kind_dir.is_dir() else 0:04d}"


def _pending(tasks: list[Task], seeds: int, kind: str, done: set[tuple[str, str, int]]) -> list[str]:
    return [t.id for t in tasks if any((kind, t.id, s) not in done for s in range(seeds))]


def _check_splits(suite_dir: Path, task_ids: list[str]) -> dict[str, tuple[str, str]]:
    families = suite_families(suite_dir)
    held = sorted({families[t][0] for t in task_ids if t in families and families[t][1] != "train"})
    if held:
        raise UserError(
            f"{suite_dir}: holds tasks of held-out families ({', '.join(held)}); held-out families are "
            "never synthesised into training data (generate the training families with `harnessfit "
            "tasks generate --all --split train`, or pass --task for the ones to record)"
        )
    return families


def synth(
    suite_dir: Path,
    out_dir: Path,
    *,
    seeds: int = 1,
    workers: int = 2,
    contrast: bool = True,
    retry: bool = False,
    second_try: bool = False,
    pi_version: str = DEFAULT_PI_VERSION,
    progress: bool = True,
    on_episode: Callable[[Episode], None] | None = None,
    task_ids: Sequence[str] | None = None,
    resume: bool = False,
    chunk: int = CHUNK,
    notes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``out_dir/sessions/{golden,contrast,retry,second-try}/<task>-s<seed>.jsonl`` (real Pi v3 sessions) +
    ``manifest.json`` (``contrast``, ``retry`` and ``second_try``: those kinds too; ``retry`` only for tasks with an
    edit or a write, ``second-try`` only for tasks whose golden plan has a decoy).

    Episodes run ``chunk`` tasks at a time (``workers`` at once); each one's outcome is appended to
    ``out_dir/progress.jsonl`` as soon as its chunk ends, so a killed run continues with ``resume=True`` and runs
    only what is missing. ``task_ids`` records only those tasks (e.g. chosen by ``harnessfit synth --from-eval``);
    ``notes`` is stored in the manifest as given (what chose them). A generated suite's held-out families are
    refused (``eval.task.suite_families``).
    """
    out_dir = Path(out_dir)
    tasks = load_suite(suite_dir)
    if task_ids is not None:
        unknown = sorted(set(task_ids) - {t.id for t in tasks})
        if unknown:
            raise UserError(f"unknown task id(s) {', '.join(unknown[:5])} in {suite_dir}")
        tasks = [t for t in tasks if t.id in set(task_ids)]
    families = _check_splits(suite_dir, [t.id for t in tasks])
    ledger = out_dir / "progress.jsonl"
    if ledger.exists() and not resume:
        raise UserError(
            f"{out_dir} holds an earlier synth run (progress.jsonl): pass --resume to continue it, or "
            "choose a new --out"
        )
    if not resume:  # sessions of an older run would otherwise be built beside this one's
        for old in ("sessions", "runs"):
            shutil.rmtree(out_dir / old, ignore_errors=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    _same_run(
        out_dir / "run.json",
        {
            "suite": str(Path(suite_dir).resolve()),
            "seeds": seeds,
            "contrast": contrast,
            **({"retry": True} if retry else {}),  # absent when off: runs begun before retry existed resume as before
            **({"second_try": True} if second_try else {}),
            "pi_version": pi_version,
        },
        resume,
    )
    # a line cut short by a kill is skipped: its episode runs again
    rows = list(read_jsonl(ledger, bad_lines="skip", objects_only=True, missing_ok=True))
    done = {(r["kind"], r["task"], r["seed"]) for r in rows}
    wanted = {"golden": True, "contrast": contrast, "retry": retry, "second-try": second_try}
    plays = {"retry": planted_step, "second-try": decoy_step}
    kinds = {k: v for k, v in SYNTH_KINDS.items() if wanted[k]}
    with ledger.open("ab") as log:
        for kind, model in kinds.items():
            playable = [t for t in tasks if plays[kind](t) is not None] if kind in plays else tasks
            pending = _pending(playable, seeds, kind, done)
            (out_dir / "sessions" / kind).mkdir(parents=True, exist_ok=True)
            for start in range(0, len(pending), chunk):
                part = _next_part(out_dir / "runs" / kind)
                results = run_eval(
                    model,
                    suite_dir,
                    part,
                    seeds=seeds,
                    workers=workers,
                    harness=harness_spec(pi_version) if pi_version else None,
                    progress=progress,
                    on_episode=on_episode,
                    task_ids=pending[start : start + chunk],
                )
                for ep in results.episodes:
                    if (kind, ep.facts.task_id, ep.facts.seed) in done:
                        continue
                    row = _keep(ep, kind, part, out_dir, families)
                    rows.append(row)
                    log.write(orjson.dumps(row) + b"\n")
                log.flush()
    return _write_manifest(out_dir, suite_dir, seeds, pi_version, rows, notes)


def _keep(ep: Episode, kind: str, run_dir: Path, out_dir: Path, families: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """Copy a completed episode's session into ``sessions/<kind>/``; the ledger row says kept or why not."""
    f, m = ep.facts, ep.metrics
    base = {"kind": kind, "task": f.task_id, "seed": f.seed, "family": families.get(f.task_id, (None, None))[0]}
    if m is None or not m.complete_loop or f.session_file is None or m.integrity_flag in UNSCORING_FLAGS:
        why = (
            f.error
            if m is None
            else (m.integrity_flag if m.integrity_flag in UNSCORING_FLAGS else m.failure or "no session file")
        )
        return {**base, "kept": False, "reason": why}
    dst = out_dir / "sessions" / kind / f"{f.task_id}-s{f.seed}.jsonl"
    workspace = f"{WORKSPACE_ROOT}/{f.task_id}/seed-{f.seed}"
    planted: list[tuple[str, str]] = []

    def marks(entries: list[dict[str, Any]]) -> list[tuple[str, str]]:
        planted.extend(failed_edit(entries) if kind == "retry" else first_change(entries))
        return planted

    copy_session(
        run_dir / f.session_file,
        dst,
        workspace,
        f"{kind}/{f.task_id}/seed-{f.seed}",
        marks if kind in ("retry", "second-try") else None,
    )
    if kind in ("retry", "second-try") and not planted:  # never keep a session whose mistake would be a label
        dst.unlink()
        why = "the planted edit did not fail" if kind == "retry" else "no change to mark as the decoy"
        return {**base, "kept": False, "reason": why}
    return {
        **base,
        "kept": True,
        "path": dst.relative_to(out_dir).as_posix(),
        "sha256": sha256_file(dst),
        "double_encoded_calls": m.double_encoded_arguments,
    }


def failed_edit(entries: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(entry id, why) of the first assistant message whose ``edit`` call Pi answered with an error: the mis-edit
    solver's planted mistake. Empty when no edit failed."""
    errors = {
        m.get("toolCallId"): m
        for e in entries
        if isinstance(m := e.get("message"), dict) and m.get("role") == "toolResult" and m.get("isError")
    }
    for e in entries:
        msg = e.get("message")
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        for part in msg.get("content") or []:
            failed = isinstance(part, dict) and part.get("type") == "toolCall" and part.get("id") in errors
            if failed and part.get("name") == "edit":
                return [(str(e["id"]), "planted mistake: an edit that fails (harnessfit synth, retry)")]
    return []


def first_change(entries: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(entry id, why) of the first assistant message that calls ``edit`` or ``write``: the second-try solver's
    decoy, which Pi applied. Empty when there is none."""
    for e in entries:
        msg = e.get("message")
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            for part in msg.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "toolCall" and part.get("name") in ("edit", "write"):
                    return [(str(e["id"]), "planted mistake: a wrong first change (harnessfit synth, second try)")]
    return []


def _write_manifest(
    out_dir: Path,
    suite_dir: Path,
    seeds: int,
    pi_version: str,
    rows: list[dict[str, Any]],
    notes: dict[str, Any] | None,
) -> dict[str, Any]:
    files = [
        {k: v for k, v in r.items() if k not in ("kept", "reason") and (k != "family" or v is not None)}
        for r in rows
        if r["kept"]
    ]
    skipped = [{k: v for k, v in r.items() if k in ("kind", "task", "seed", "reason")} for r in rows if not r["kept"]]
    if not files:
        raise UserError(f"synth produced no sessions for {suite_dir} (every episode failed; see {out_dir}/runs)")
    per_family: dict[str, int] = {}
    for r in files:
        if r.get("family"):
            per_family[r["family"]] = per_family.get(r["family"], 0) + 1
    manifest = {
        "stage": "synth",
        "suite": str(suite_dir),
        "seeds": seeds,
        "pi_version": pi_version,
        "harness": harness_spec(pi_version),
        "pi_package": installed_package(pi_version),
        "files": sorted(files, key=lambda r: r["path"]),
        "skipped": skipped,
        **({"sessions_per_family": dict(sorted(per_family.items()))} if per_family else {}),
        **({"notes": notes} if notes else {}),
    }
    (out_dir / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
    return manifest
