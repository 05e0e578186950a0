"""Reader registry: one line per format, lazy imports, content detection, and a deterministic walk into units.

Adding a format = one module with a ``Reader`` class + one line in ``FORMATS``. Detection tries formats in the
order of ``FORMATS`` (most specific sniffers first), so the order is part of the contract.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harnessfit.core.rejection import Reason, Rejection
from harnessfit.errors import UserError
from harnessfit.traces.readers.base import Reader, file_problem, file_sha256, reject
from harnessfit.core.trajectory import Trajectory

__all__ = [
    "FORMATS",
    "Unit",
    "get_reader",
    "available_formats",
    "detect_format",
    "iter_units",
    "read_unit",
    "relabel",
]

FORMATS: dict[str, str] = {
    "pi": "harnessfit.traces.readers.pi:PiReader",
    "claude_code": "harnessfit.traces.readers.claude_code:ClaudeCodeReader",
    "codex": "harnessfit.traces.readers.codex:CodexReader",
    "swe_agent": "harnessfit.traces.readers.swe_agent:SweAgentReader",
    "openhands": "harnessfit.traces.readers.openhands:OpenHandsReader",
    "openai_chat": "harnessfit.traces.readers.openai_chat:OpenAIChatReader",
}
"""format name → ``module:Class`` (imported on first use). Order = detection order."""


@dataclass(frozen=True, slots=True)
class Unit:
    """One thing a reader reads: a file, or a folder that one reader claims whole (e.g. OpenHands V1).

    ``label`` is the stable name written into records: the path relative to the parent of the input argument it
    was found under (``traces/pi/x.jsonl`` for input ``traces``), so it does not depend on the absolute location.
    ``index`` is the unit's position in the sorted walk (results are re-ordered by it).
    """

    index: int
    path: Path
    label: str


@cache
def _load(name: str) -> Reader:
    module_name, _, cls_name = FORMATS[name].partition(":")
    return getattr(importlib.import_module(module_name), cls_name)()


def get_reader(name: str) -> Reader:
    """The reader instance for a format name; ``UserError`` if the name is unknown."""
    if name not in FORMATS:
        raise UserError(f"unknown trace format {name!r}; known: {', '.join(FORMATS)}")
    return _load(name)


def available_formats() -> list[str]:
    """Every registered format, in detection order (each is one module of this package)."""
    return list(FORMATS)


def _check_formats(formats: Sequence[str] | None) -> list[str]:
    if formats is None:
        return available_formats()
    for name in formats:
        get_reader(name)  # raises UserError for an unknown name
    return [name for name in FORMATS if name in set(formats)]


def detect_format(path: Path, formats: Sequence[str] | None = None) -> str | None:
    """The first format (in ``FORMATS`` order, restricted to ``formats``) whose reader detects ``path``."""
    for name in _check_formats(formats):
        try:
            if _load(name).detect(path):
                return name
        except Exception:  # a detector must not raise; treat it as "not mine"
            continue
    return None


def _claimed_folder(path: Path, names: list[str]) -> bool:
    for name in names:
        try:
            if _load(name).detect(path):
                return True
        except Exception:
            continue
    return False


def iter_units(inputs: Sequence[Path | str], formats: Sequence[str] | None = None) -> list[Unit]:
    """Walk the inputs into a sorted list of units. Deterministic: inputs are sorted, folders walked in sorted
    order, symlinked folders not followed. A folder some reader detects is one unit (not descended into).
    A missing input is a ``UserError``."""
    names = _check_formats(formats)
    found: dict[str, tuple[Path, str]] = {}
    for raw in sorted({str(Path(p)) for p in inputs}):
        root = Path(raw)
        if not root.exists():
            raise UserError(f"input not found: {root}")
        base = root.resolve().parent
        if root.is_file() or _claimed_folder(root, names):
            found.setdefault(str(root.resolve()), (root, root.resolve().relative_to(base).as_posix()))
            continue
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            here = Path(dirpath)
            keep = []
            for d in sorted(dirnames):
                sub = here / d
                if sub.is_symlink():
                    continue
                if _claimed_folder(sub, names):
                    found.setdefault(str(sub.resolve()), (sub, sub.resolve().relative_to(base).as_posix()))
                else:
                    keep.append(d)
            dirnames[:] = keep
            for f in sorted(filenames):
                p = here / f
                if p.is_file():
                    found.setdefault(str(p.resolve()), (p, p.resolve().relative_to(base).as_posix()))
    ordered = sorted(found.values(), key=lambda t: t[1])
    return [Unit(index=i, path=p, label=label) for i, (p, label) in enumerate(ordered)]


def relabel(record: Trajectory | Rejection, label: str) -> Trajectory | Rejection:
    """Replace the reader's path with the unit's stable label (in place) and return the record."""
    if isinstance(record, Trajectory):
        record.provenance.file = label
    else:
        record.file = label
    return record


def read_unit(unit: Unit, formats: Sequence[str] | None = None) -> Iterator[Trajectory | Rejection]:
    """Detect the unit's format and read it; an undetected unit is one ``unknown_format`` rejection.

    Any exception a reader lets escape is turned into a ``parse_error`` rejection for the unit (and the records
    it already yielded stay), so one bad file never stops a run."""
    name = detect_format(unit.path, formats)
    if name is None:
        sha = file_sha256(unit.path)
        problem = file_problem(unit.path, "unknown", sha) if unit.path.is_file() else None
        if problem is not None:  # empty or binary: say so rather than "unknown format"
            yield relabel(problem, unit.label)
            return
        yield relabel(
            reject(
                unit.path, "unknown", Reason.unknown_format, "no reader recognised this file's content",
                "convert it to a supported format (" + ", ".join(FORMATS) + ") or leave it out", sha256=sha,
            ),
            unit.label,
        )
        return
    reader = get_reader(name)
    count = 0
    try:
        for record in reader.read(unit.path):
            count += 1
            yield relabel(record, unit.label)
    except Exception as exc:  # reader bug on odd data: keep going, say so in the ledger
        sha = file_sha256(unit.path)
        yield relabel(
            reject(
                unit.path, name, Reason.parse_error,
                f"reader {name} failed after {count} record(s): {type(exc).__name__}: {str(exc)[:200]}",
                "inspect the file; the reader could not make sense of its structure",
                sha256=sha, record_id=None,
            ),
            unit.label,
        )
