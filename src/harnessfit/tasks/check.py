"""Is a generated task sound? Play its golden plan on a copy of its workspace, outside Pi, and judge it.

A sound task: every reference step applies (an edit's ``oldText`` occurs exactly once, as Pi's edit tool requires),
every ``expect`` is in the previous step's output, the expected change holds afterwards, and the hidden checker
passes after the plan and fails on the untouched workspace. A step with a ``decoy`` is also played as the decoy:
the validation command must then fail, and the second-try solver's repair (``eval.task.repair_edit``) must leave the
file as the step itself does. This is a generator's self-test on the host — the code
is the generator's own — not an evaluation: episodes run through Pi in the sandbox (``eval/episode_runner.py``).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from harnessfit.eval.task import ReferenceStep, Task, repair_edit

__all__ = ["TaskProblem", "check_task", "play_reference"]


class TaskProblem(Exception):
    """A generated task that is not sound; the message names the step."""


def _run(command: str, cwd: Path, timeout: float = 30.0) -> tuple[int, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(cwd), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def play_reference(task: Task, ws: Path) -> None:
    """Play the golden plan on the folder ``ws`` (a copy of the task's workspace), checking each step as Pi would."""
    last = ""
    for i, step in enumerate(task.reference):
        if step.expect is not None and step.expect not in last:
            raise TaskProblem(f"{task.id}: step {i} expects {step.expect!r}, the previous output was {last[-300:]!r}")
        args = step.args or {}
        if step.decoy is not None:
            with tempfile.TemporaryDirectory(prefix="hf-decoy-") as tmp:
                shutil.copytree(ws, Path(tmp) / "ws")
                _check_decoy(task, i, step, Path(tmp) / "ws")
        if step.tool == "read":
            path = ws / args["path"]
            if not path.is_file():
                raise TaskProblem(f"{task.id}: step {i} reads {args['path']}, which does not exist")
            last = path.read_text(encoding="utf-8")
        elif step.tool == "write":
            path = ws / args["path"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(args["content"], encoding="utf-8")
            last = ""
        elif step.tool == "edit":
            path = ws / args["path"]
            text = path.read_text(encoding="utf-8")
            for e in args["edits"]:
                if text.count(e["oldText"]) != 1:
                    raise TaskProblem(
                        f"{task.id}: step {i}: {e['oldText']!r} occurs {text.count(e['oldText'])} "
                        f"times in {args['path']} (Pi's edit needs exactly one)"
                    )
                text = text.replace(e["oldText"], e["newText"])
            path.write_text(text, encoding="utf-8")
            last = ""
        elif step.tool == "bash":
            _, last = _run(args["command"], ws)


def _check_decoy(task: Task, k: int, step: ReferenceStep, ws: Path) -> None:
    """``ws`` holds the workspace as it is before step ``k``: play the decoy there, validate, repair, compare."""
    path = ws / (step.args or {})["path"]
    before = path.read_text(encoding="utf-8") if path.is_file() else ""
    wrong, right = step.decoy_texts()
    old = (step.args or {}).get("edits", [{}])[0].get("oldText") if step.tool == "edit" else None
    if old is not None and before.count(old) != 1:
        raise TaskProblem(f"{task.id}: step {k}'s decoy: {old!r} does not occur once")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(before.replace(old, wrong) if old is not None else wrong, encoding="utf-8")
    rc, out = _run(task.validation_command, ws)
    if rc == 0:
        raise TaskProblem(f"{task.id}: step {k}'s decoy passes the validation command: {out[-300:]!r}")
    current = path.read_text(encoding="utf-8")
    fix_old, fix_new = repair_edit(wrong, right, current)
    if current.count(fix_old) != 1:
        raise TaskProblem(f"{task.id}: step {k}'s repair {fix_old!r} does not occur once after the decoy")
    if current.replace(fix_old, fix_new) != (before.replace(old, right) if old is not None else right):
        raise TaskProblem(f"{task.id}: step {k}'s repair does not leave the file as the step does")


def _checker_passes(task: Task, ws: Path) -> tuple[bool, str]:
    shutil.copytree(task.checker_dir, ws, dirs_exist_ok=True)
    rc, out = _run(task.checker.command, ws, timeout=task.checker.timeout_s)
    return rc == 0, out


def check_task(task: Task) -> None:
    """Raise ``TaskProblem`` unless the golden plan solves ``task`` and the untouched workspace does not."""
    with tempfile.TemporaryDirectory(prefix="hf-task-") as tmp:
        solved, untouched = Path(tmp) / "solved", Path(tmp) / "untouched"
        for ws in (solved, untouched):
            if task.workspace_dir.is_dir():
                shutil.copytree(task.workspace_dir, ws)
            else:
                ws.mkdir()
        play_reference(task, solved)
        missing = [c.path for c in task.expected_change if not c.holds(solved)]
        if missing:
            raise TaskProblem(f"{task.id}: after the golden plan the expected change does not hold for {missing}")
        ok, out = _checker_passes(task, solved)
        if not ok:
            raise TaskProblem(f"{task.id}: the checker fails after the golden plan: {out[-300:]!r}")
        ok, _ = _checker_passes(task, untouched)
        if ok:
            raise TaskProblem(
                f"{task.id}: the checker passes on the untouched workspace ({shlex.quote(task.checker.command)})"
            )
