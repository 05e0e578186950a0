"""Task families: a family turns a seed into one distinct, checkable task in the project's task format.

A family is one decorated function ``build(rng) -> TaskDraft`` registered with its name, its split (``train`` or
``heldout``: held-out families are never synthesised into training data) and its kind (edit / recover / create).
The draft holds everything a task folder holds — the prompt (which names the validation command), the starting
files, the hidden checker's files, the file predicates and the golden plan — and ``write_task`` turns it into
``<out>/<id>/task.yaml`` + ``workspace/`` + ``checker/``, loaded back through ``eval.task.load_task`` so a generated
task obeys every rule a hand-written one does.

Adding a family = one function with ``@family(...)`` in a module of ``harnessfit.tasks.families``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from harnessfit.errors import UserError
from harnessfit.eval.task import Task, TaskKind, load_task

__all__ = ["TaskDraft", "Family", "FAMILIES", "family", "get_family", "families_in", "write_task", "pick", "Split"]

Split = Literal["train", "heldout"]


@dataclass
class TaskDraft:
    """One task before it is written: what ``task.yaml`` says plus the files of ``workspace/`` and ``checker/``.

    ``reference`` steps are task.yaml's: ``{"tool": ..., "args": {...}}`` (with an optional ``expect``: text the
    previous tool result must hold, and on an edit or a write an optional ``decoy``: the same call gone wrong, which
    the second-try solver plays first) and a last ``{"final": ...}``. ``checker`` files are copied into the workspace
    only after the agent stopped; the default checker command runs ``hf_check.py`` isolated.
    """

    kind: TaskKind
    prompt: str
    validation_command: str
    expected_change: list[dict[str, Any]]
    workspace: dict[str, str]
    checker: dict[str, str]
    reference: list[dict[str, Any]]
    checker_command: str = "python3 -I hf_check.py"
    max_turns: int = 8
    max_seconds: float = 180.0
    notes: dict[str, Any] = field(default_factory=dict)  # what the generator chose (shown by `tasks generate`)

    def spec(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "prompt": self.prompt.rstrip("\n") + "\n",
            "validation_command": self.validation_command,
            "expected_change": self.expected_change,
            "checker": {"command": self.checker_command},
            "limits": {"max_turns": self.max_turns, "max_seconds": self.max_seconds},
            "reference": self.reference,
        }


@dataclass(frozen=True)
class Family:
    """A registered generator: ``build`` draws every choice from the ``random.Random`` it is given."""

    name: str
    split: Split
    kind: TaskKind
    summary: str
    build: Callable[[random.Random], TaskDraft]


FAMILIES: dict[str, Family] = {}


def family(
    name: str, *, split: Split, kind: TaskKind, summary: str
) -> Callable[[Callable[[random.Random], TaskDraft]], Callable[[random.Random], TaskDraft]]:
    """Register ``build`` as the family ``name``."""

    def register(build: Callable[[random.Random], TaskDraft]) -> Callable[[random.Random], TaskDraft]:
        if name in FAMILIES:
            raise ValueError(f"task family {name!r} registered twice")
        FAMILIES[name] = Family(name, split, kind, summary, build)
        return build

    return register


def _load_all() -> None:
    from harnessfit.tasks import families  # noqa: F401  (registers every family module on import)


def families_in(split: Split | None = None) -> list[Family]:
    """Every registered family (of one split), sorted by name."""
    _load_all()
    return sorted((f for f in FAMILIES.values() if split is None or f.split == split), key=lambda f: f.name)


def get_family(name: str) -> Family:
    _load_all()
    if name not in FAMILIES:
        raise UserError(
            f"unknown task family {name!r} (`harnessfit tasks list` shows them: {', '.join(sorted(FAMILIES))})"
        )
    return FAMILIES[name]


def pick(rng: random.Random, options: Sequence[Any]) -> Any:
    """One of ``options`` (the families' one way of choosing, so a seed fixes every choice)."""
    return options[rng.randrange(len(options))]


class _BlockDumper(yaml.SafeDumper):
    """YAML with multi-line strings (prompts, file contents) as literal blocks, as the hand-written tasks are."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.startswith((" ", "\n")) and " \n" not in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def write_task(draft: TaskDraft, out: Path) -> Task:
    """Write ``draft`` as the task folder ``out`` and load it back (every task rule checked by the loader)."""
    out.mkdir(parents=True, exist_ok=False)
    (out / "task.yaml").write_text(
        yaml.dump(draft.spec(), Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8"
    )
    for sub, files in (("workspace", draft.workspace), ("checker", draft.checker)):
        (out / sub).mkdir()
        for rel, text in files.items():
            path = out / sub / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    return load_task(out)
