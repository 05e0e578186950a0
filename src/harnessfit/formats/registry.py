"""The format registry: one entry per source format (its reader and its mapping), content detection, and the
deterministic walk of the inputs into units.

Adding a format = one folder ``formats/<name>/`` (``reader.py`` with a ``BaseTraceReader``, ``mapping.py`` with a
``Mapping``) + one entry in ``FORMATS``. Detection tries formats in the order of ``FORMATS`` (most specific sniffers
first), so the order is part of the contract. Entries name their classes as ``"module:Class"`` strings, imported on
first use (a run that reads only Pi sessions never imports the Codex code); a class itself works too.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessfit.core.rejection import Reason, Rejection, reject
from harnessfit.core.trajectory import Trajectory
from harnessfit.errors import UserError
from harnessfit.formats.base import BaseTraceReader, Mapping
from harnessfit.formats.reading import detection_cache, file_problem, file_sha256, max_record_bytes

__all__ = [
    "Format",
    "FORMATS",
    "Unit",
    "get_format",
    "get_reader",
    "get_mapping",
    "available_formats",
    "detect_format",
    "iter_units",
    "read_unit",
]


@dataclass(frozen=True)
class Format:
    """A source format: the reader that turns its files into trajectories and the mapping that turns its tool calls
    into the harness's. Why both in one entry: they are two halves of one format and must never disagree on names.

    ``reader`` / ``mapping``: ``"module:Class"`` (imported on first use) or the class itself."""

    reader: str | type[BaseTraceReader]
    mapping: str | type


FORMATS: dict[str, Format] = {
    "pi": Format("harnessfit.formats.pi.reader:PiReader", "harnessfit.formats.pi.mapping:PiMapping"),
    "claude_code": Format(
        "harnessfit.formats.claude_code.reader:ClaudeCodeReader",
        "harnessfit.formats.claude_code.mapping:ClaudeCodeMapping",
    ),
    "codex": Format("harnessfit.formats.codex.reader:CodexReader", "harnessfit.formats.codex.mapping:CodexMapping"),
    "swe_agent": Format(
        "harnessfit.formats.swe_agent.reader:SweAgentReader", "harnessfit.formats.swe_agent.mapping:SweAgentMapping"
    ),
    "openhands": Format(
        "harnessfit.formats.openhands.reader:OpenHandsReader", "harnessfit.formats.openhands.mapping:OpenHandsMapping"
    ),
    "openai_chat": Format(
        "harnessfit.formats.openai_chat.reader:OpenAIChatReader",
        "harnessfit.formats.openai_chat.mapping:OpenAIChatMapping",
    ),
}
"""format name → ``Format``. Order = detection order."""

_LOADED: dict[str | type, Any] = {}


def _instance(spec: str | type) -> Any:
    obj = _LOADED.get(spec)
    if obj is None:
        if isinstance(spec, str):
            module_name, _, cls_name = spec.partition(":")
            spec_cls = getattr(importlib.import_module(module_name), cls_name)
        else:
            spec_cls = spec
        obj = _LOADED[spec] = spec_cls()
    return obj


def get_format(name: str) -> Format:
    """The registry entry for a format name; ``UserError`` if the name is unknown."""
    fmt = FORMATS.get(name)
    if fmt is None:
        raise UserError(f"unknown trace format {name!r}; known: {', '.join(FORMATS)}")
    return fmt


def get_reader(name: str) -> BaseTraceReader:
    """The reader instance for a format name (its ``name`` must be the registry key)."""
    reader = _instance(get_format(name).reader)
    if reader.name != name:
        raise UserError(f"format {name!r} is registered with a reader named {reader.name!r}")
    return reader


def get_mapping(name: str) -> Mapping:
    """The mapping instance for a format name; ``UserError`` if the name is unknown."""
    return _instance(get_format(name).mapping)


def available_formats() -> list[str]:
    """Every registered format, in detection order."""
    return list(FORMATS)


def _check_formats(formats: Sequence[str] | None) -> list[str]:
    if formats is None:
        return available_formats()
    for name in formats:
        get_format(name)  # raises UserError for an unknown name
    return [name for name in FORMATS if name in set(formats)]


def detect_format(path: Path, formats: Sequence[str] | None = None) -> str | None:
    """The first format (in ``FORMATS`` order, restricted to ``formats``) whose reader detects ``path``."""
    with detection_cache():  # the detectors share one parse of the file's first record
        for name in _check_formats(formats):
            try:
                if get_reader(name).detect(path):
                    return name
            except Exception:  # noqa: BLE001 - a detector must not raise; treat it as "not mine"
                continue
    return None


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


def _claimed_folder(path: Path, names: list[str]) -> bool:
    return detect_format(path, names) is not None


def iter_units(inputs: Sequence[Path | str], formats: Sequence[str] | None = None) -> list[Unit]:
    """Walk the inputs into a sorted list of units. Deterministic: inputs are sorted, folders walked in sorted
    order, symlinked folders not followed. A folder some reader detects is one unit (not descended into). A
    dangling link or link loop inside a folder is a unit (``read_unit`` gives its ledger row); a symlinked file whose
    target lies outside the input's folder is labelled where the link is. A missing input is a ``UserError``."""
    names = _check_formats(formats)
    max_record_bytes()  # a bad $HARNESSFIT_MAX_RECORD_BYTES is one line before any work, not a crash in a worker
    found: dict[str, tuple[Path, str]] = {}
    for raw in sorted({str(Path(p)) for p in inputs}):
        root = Path(raw)
        if not root.exists():
            if root.is_symlink():
                raise UserError(f"input is a symbolic link whose target does not exist or that loops: {root}")
            raise UserError(f"input not found: {root}")
        base = root.resolve().parent
        link_base = Path(os.path.abspath(root)).parent

        def add(p: Path) -> None:
            where = Path(os.path.abspath(p))
            key = p.resolve() if p.exists() else where  # a dangling link or a link loop: where it is
            try:
                label = key.relative_to(base).as_posix()  # noqa: B023 - `add` runs within its own iteration
            except ValueError:  # a link to outside the input's folder: named where the link is
                label = where.relative_to(link_base).as_posix()  # noqa: B023 - the same
            found.setdefault(str(key), (p, label))

        if root.is_file() or _claimed_folder(root, names):
            add(root)
            continue
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            here = Path(dirpath)
            keep = []
            for d in sorted(dirnames):
                sub = here / d
                if sub.is_symlink():
                    continue
                if _claimed_folder(sub, names):
                    add(sub)
                else:
                    keep.append(d)
            dirnames[:] = keep
            for f in sorted(filenames):
                p = here / f
                # a dangling link or a link loop is a unit too: reading it gives its ledger row
                if p.is_file() or (p.is_symlink() and not p.exists()):
                    add(p)
    ordered = sorted(found.values(), key=lambda t: t[1])
    return [Unit(index=i, path=p, label=label) for i, (p, label) in enumerate(ordered)]


def read_unit(unit: Unit, formats: Sequence[str] | None = None) -> Iterator[Trajectory | Rejection]:
    """Detect the unit's format and read it (``BaseTraceReader.read``); an undetected unit is one
    ``unknown_format`` rejection (or ``empty`` / ``binary_file`` when that is what it is)."""
    name = detect_format(unit.path, formats)
    if name is not None:
        yield from get_reader(name).read(unit.path, unit.label)
        return
    sha = file_sha256(unit.path)
    problem = None if unit.path.is_dir() else file_problem(unit.path, "unknown", sha)
    if problem is None:  # empty or binary: say so rather than "unknown format"
        problem = reject(
            unit.path,
            Reason.unknown_format,
            "no reader recognised this file's content",
            "convert it to a supported format (" + ", ".join(FORMATS) + ") or leave it out",
            source="unknown",
            sha256=sha,
        )
    problem.file = unit.label
    yield problem
