"""Eval task spec: one folder with ``task.yaml``, the fixture files the agent starts from, and a hidden checker.

A task says what the agent is asked (the prompt, which names the validation command it should run), what change
counts as made (file predicates), how success is judged independently (a checker command whose files are copied
into the workspace only after the agent stopped, so the agent can neither read nor tamper with them), the limits
of one episode, and a reference solution (the tool calls a golden solver plays, step by step).

Folder layout::

    <suite>/<task>/task.yaml
    <suite>/<task>/workspace/...   copied into a fresh workspace before the agent starts
    <suite>/<task>/checker/...     copied into the workspace after the agent stops
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harnessfit.core.jsonio import sha256_bytes
from harnessfit.errors import UserError
from harnessfit.eval.safefs import read_regular, relative_parts

__all__ = [
    "TaskKind",
    "ExpectedChange",
    "Checker",
    "Limits",
    "ReferenceStep",
    "repair_edit",
    "Task",
    "load_task",
    "load_suite",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "SUITE_MANIFEST",
    "suite_families",
]

SUITE_MANIFEST = "tasks.json"  # written beside generated task folders by `harnessfit tasks generate`

DEFAULT_MAX_OUTPUT_BYTES = 50 * 1024 * 1024


class TaskKind(StrEnum):
    """The three kinds of the published benchmark."""

    edit = "edit"  # read -> exact edit -> validate
    recover = "recover"  # first validation run fails (planted bug / missing file); fix, re-run
    create = "create"  # create a file and validate it


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExpectedChange(_Strict):
    """A predicate over one workspace file after the agent stopped (before checker files are copied in).

    Exactly one of ``contains``/``not_contains``/``equals``/``exists`` must be given. Only a regular file reached
    without following any link counts (``safefs.read_regular``): a link the agent planted under the expected
    name, or a linked folder on the way, is "no such file", and a FIFO is never opened for reading.
    """

    path: str
    contains: str | None = None
    not_contains: str | None = None
    equals: str | None = None
    exists: bool | None = None

    @model_validator(mode="after")
    def _one_predicate(self) -> ExpectedChange:
        given = [k for k in ("contains", "not_contains", "equals", "exists") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"expected_change for {self.path!r} needs exactly one of contains/not_contains/equals/exists "
                f"(got {given or 'none'})"
            )
        relative_parts(self.path)  # ValueError (shown by the loader) for an absolute path or one with ..
        return self

    def holds(self, workspace: Path) -> bool:
        data = read_regular(workspace, self.path)
        if self.exists is not None:
            return (data is not None) == self.exists
        if data is None:
            return False
        text = data.decode("utf-8", errors="replace")
        if self.contains is not None:
            return self.contains in text
        if self.not_contains is not None:
            return self.not_contains not in text
        return text == self.equals


class Checker(_Strict):
    """The independent check: ``command`` run with the workspace as cwd after the checker files were copied in.

    A Python checker must run isolated (``python3 -I hf_check.py``): without ``-I`` the workspace — which the agent
    wrote — comes first on ``sys.path``, and a planted ``subprocess.py`` or ``json.py`` would stand in for the
    standard library. The rule holds for every Python the command names, wherever it stands (``timeout 20
    python3 …``, ``cd x && python3 …``); a Python started from a script the command runs is isolated by the
    runner's environment (``PYTHONSAFEPATH``, see ``eval.episode_runner.checker_env``). A checker that imports the code
    under test appends ``"."`` to ``sys.path`` itself.
    """

    command: str
    timeout_s: float = 60.0

    @model_validator(mode="after")
    def _isolated_python(self) -> Checker:
        if _UNISOLATED_PYTHON.search(self.command):
            raise ValueError(f"run a Python checker isolated, as `python3 -I …` (got {self.command!r})")
        return self


# a word that runs Python (at the start, or after a separator, a wrapper or a path) followed by anything but -I
_UNISOLATED_PYTHON = re.compile(r"(?:^|[\s;&|()`])(?:\S*/)?python(?:3(?:\.\d+)?)?(?=\s|$)(?!\s+-[A-Za-z]*I)")


class Limits(_Strict):
    """Per-episode caps: model turns (an extension aborts Pi at turn N), wall clock, captured output bytes, and the
    sandbox's resource caps (``eval/caps.py``): the sizes of the workspace, ``/tmp`` and HOME (each a tmpfs inside
    the sandbox), the largest file one process may write (``RLIMIT_FSIZE``), the processes and threads alive at once
    (``RLIMIT_NPROC`` in the sandbox's own user namespace), the CPU seconds of all of them together (default: twice
    the wall clock) and their resident memory. A hit stops the episode with a named failure (``cap_disk``,
    ``cap_fsize``, ``cap_pids``, ``cap_cpu``, ``cap_memory``)."""

    max_turns: int = Field(default=10, ge=1)
    max_seconds: float = Field(default=300.0, gt=0)
    max_output_bytes: int = Field(default=DEFAULT_MAX_OUTPUT_BYTES, gt=0)
    max_workspace_bytes: int = Field(default=1 << 30, ge=1 << 20)
    max_tmp_bytes: int = Field(default=512 << 20, ge=1 << 20)
    max_home_bytes: int = Field(default=512 << 20, ge=1 << 20)
    max_file_bytes: int = Field(default=256 << 20, ge=1 << 20)
    max_processes: int = Field(default=512, ge=64)  # Pi and the launcher are Node: about a dozen threads each
    max_cpu_seconds: float | None = Field(default=None, gt=0)  # None: twice max_seconds
    max_memory_bytes: int = Field(
        default=4 << 30, ge=512 << 20
    )  # resident, all processes: Pi and its launcher ~200 MiB


class ReferenceStep(_Strict):
    """One step of the reference solution: a tool call, or the final answer.

    ``expect`` (optional) is text the previous tool result must contain before this step is played — the golden
    solver reads tool results (e.g. a recover task sees the first validation fail before fixing).

    ``decoy`` (optional, on an ``edit`` with one entry or a ``write``) is the arguments of the same call gone wrong
    the way a model's first attempt does: Pi applies it, and the validation command still fails. An edit's decoy
    keeps the path and ``oldText`` and writes another ``newText``; a write's keeps the path. The second-try solver
    plays it first, then validates, reads the file and repairs it with ``repair_edit`` (``eval.scripted_models``).
    """

    tool: Literal["read", "bash", "edit", "write"] | None = None
    args: dict[str, Any] | None = None
    final: str | None = None
    expect: str | None = None
    decoy: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _call_or_final(self) -> ReferenceStep:
        if (self.tool is None) == (self.final is None):
            raise ValueError("a reference step is either a tool call (tool + args) or a final answer (final)")
        if self.tool is not None and self.args is None:
            raise ValueError(f"reference step calling {self.tool!r} needs args")
        if self.decoy is not None:
            self.decoy_texts()  # raises when the decoy is not one of the two shapes
        return self

    def decoy_texts(self) -> tuple[str, str]:
        """(the decoy's text, the step's own): the ``newText`` of an edit's one entry, or a write's ``content``."""
        args, decoy = self.args or {}, self.decoy or {}
        if self.tool == "write" and decoy.get("path") == args.get("path"):
            wrong, right = decoy.get("content"), args.get("content")
        elif self.tool == "edit" and decoy.get("path") == args.get("path"):
            own, other = args.get("edits"), decoy.get("edits")
            one = [e[0] for e in (own, other) if isinstance(e, list) and len(e) == 1 and isinstance(e[0], dict)]
            if len(one) != 2 or one[0].get("oldText") != one[1].get("oldText"):
                raise ValueError("an edit's decoy has one entry with the step's path and oldText")
            wrong, right = one[1].get("newText"), one[0].get("newText")
        else:
            raise ValueError("a decoy is on an edit or a write, with the step's path")
        if not isinstance(wrong, str) or not isinstance(right, str) or wrong == right:
            raise ValueError("a decoy writes text of its own, not the step's")
        return wrong, right


def repair_edit(wrong: str, right: str, current: str) -> tuple[str, str]:
    """The ``(oldText, newText)`` that turns ``wrong`` into ``right`` where ``current`` (the file as read) holds it:
    the smallest run of whole lines where the two differ, widened a line at a time until it occurs exactly once in
    ``current`` (Pi's edit needs one match), a trailing newline both share left out. A decoy whose whole text is not
    unique in the file gets a repair Pi refuses; ``tasks.check`` rejects such a task."""
    a, b = wrong.splitlines(keepends=True), right.splitlines(keepends=True)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    while True:
        old, new = "".join(a[head : len(a) - tail]), "".join(b[head : len(b) - tail])
        if old.endswith("\n") and new.endswith("\n"):
            old, new = old[:-1], new[:-1]
        if old and current.count(old) == 1:
            return old, new
        if head == 0 and tail == 0:
            return old or wrong, new if old else right
        if head > 0:
            head -= 1
        else:
            tail -= 1


class Task(_Strict):
    """One eval task, loaded from ``task.yaml``; ``root`` and ``id`` are filled by the loader."""

    id: str = ""
    root: Path = Path(".")
    kind: TaskKind
    prompt: str
    validation_command: str
    expected_change: list[ExpectedChange] = Field(min_length=1)
    checker: Checker
    limits: Limits = Field(default_factory=Limits)
    reference: list[ReferenceStep] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        if self.validation_command not in self.prompt:
            raise ValueError("the prompt must name the validation command verbatim (validation_command)")
        if self.reference[-1].final is None:
            raise ValueError("the reference solution must end with a final answer (final: ...)")
        if any(step.final is not None for step in self.reference[:-1]):
            raise ValueError("only the last reference step may be a final answer")
        return self

    @property
    def workspace_dir(self) -> Path:
        return self.root / "workspace"

    @property
    def checker_dir(self) -> Path:
        return self.root / "checker"

    def fingerprint(self) -> str:
        """SHA-256 over task.yaml and every fixture/checker file (names + bytes), sorted."""
        parts: list[bytes] = []
        for path in sorted(p for p in self.root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            parts.append(path.relative_to(self.root).as_posix().encode() + b"\0" + path.read_bytes())
        return sha256_bytes(b"\1".join(parts))


def load_task(task_dir: Path) -> Task:
    """Load and validate one task folder; every problem is a one-line ``UserError`` naming the file."""
    task_dir = Path(task_dir)
    spec = task_dir / "task.yaml"
    if not spec.is_file():
        raise UserError(f"{spec}: missing (a task folder needs task.yaml)")
    try:
        data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise UserError(f"{spec}: not valid YAML: {str(exc).splitlines()[0]}") from exc
    if not isinstance(data, dict):
        raise UserError(f"{spec}: expected a mapping at the top level, got {type(data).__name__}")
    data.setdefault("id", task_dir.name)
    data["root"] = task_dir.resolve()
    try:
        task = Task.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise UserError(f"{spec}: {loc}: {first['msg']} ({exc.error_count()} problem(s))") from exc
    if not task.checker_dir.is_dir():
        raise UserError(f"{spec}: checker/ folder missing beside task.yaml (the independent checker's files)")
    return task


def load_suite(suite_dir: Path) -> list[Task]:
    """All tasks of a suite (sub-folders holding task.yaml), sorted by id; ids must be unique."""
    suite_dir = Path(suite_dir)
    if not suite_dir.is_dir():
        raise UserError(f"suite folder not found: {suite_dir}")
    tasks = [load_task(p) for p in sorted(suite_dir.iterdir()) if (p / "task.yaml").is_file()]
    if not tasks:
        raise UserError(f"{suite_dir}: no tasks (expected <task>/task.yaml sub-folders)")
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise UserError(f"{suite_dir}: duplicate task id {task.id!r}")
        seen.add(task.id)
    return sorted(tasks, key=lambda t: t.id)


def suite_families(suite_dir: Path) -> dict[str, tuple[str, str]]:
    """``{task id: (family, split)}`` from a generated suite's ``tasks.json``; empty for a hand-written suite.

    The split (``train`` / ``heldout``) is what keeps held-out families out of training data: the synthesis stage
    refuses a task whose family is held out.
    """
    path = Path(suite_dir) / SUITE_MANIFEST
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))  # JSON is YAML; no second parser needed
        return {str(r["id"]): (str(r["family"]), str(r["split"])) for r in data["tasks"]}
    except (yaml.YAMLError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: not a task manifest written by `harnessfit tasks generate` ({exc})") from exc
