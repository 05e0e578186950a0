"""The convert run: walk inputs into units, read + convert each (optionally in worker processes), keep order.

Determinism: units are sorted (``iter_units``); each unit is converted independently; results are yielded in unit
order (``Pool.imap`` keeps order), so the output bytes are the same for any worker count. Memory: one unit's
records at a time per worker (readers stream lines; a unit is one session file).
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessfit.convert.conversation import Conversation
from harnessfit.convert.rejection import Rejection
from harnessfit.convert.wire import to_conversation
from harnessfit.traces.readers.registry import Unit, iter_units, read_unit
from harnessfit.traces.trajectory import Trajectory

__all__ = ["UnitResult", "convert_unit", "iter_unit_results", "iter_convert"]


@dataclass
class UnitResult:
    """Everything one unit produced: ``read`` counts reader records, ``outputs`` has one item per read record."""

    index: int
    label: str
    format: str
    size: int
    read: int = 0
    outputs: list[Conversation | Rejection] = field(default_factory=list)


def _size(path: Path) -> int:
    try:
        if path.is_dir():
            return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        return path.stat().st_size
    except OSError:
        return 0


def convert_unit(unit: Unit, card: Any, formats: Sequence[str] | None = None,
                 install_dir: str | None = None) -> UnitResult:
    """Read one unit and convert each trajectory; reader rejections pass through. ``install_dir`` is the harness
    folder the system prompt names (``None``: the card's default, where ``harnessfit harness install`` puts it)."""
    res = UnitResult(index=unit.index, label=unit.label, format="unknown", size=_size(unit.path))
    for record in read_unit(unit, formats):
        res.read += 1
        if isinstance(record, Trajectory):
            res.format = record.source
            try:
                out = to_conversation(record, card, install_dir=install_dir)
            except Exception as exc:  # a converter bug on odd data must not stop the run
                from harnessfit.convert.gates import rejection_for
                from harnessfit.convert.rejection import Reason

                out = rejection_for(record, Reason.parse_error, f"converter failed: {type(exc).__name__}: "
                                    f"{str(exc)[:200]}", "report this trajectory shape as a converter bug")
            res.outputs.append(out)
        else:
            if res.format == "unknown" and record.source != "unknown":
                res.format = record.source
            res.outputs.append(record)
    return res


_WORKER: dict[str, Any] = {}


def _init_worker(card: Any, formats: Sequence[str] | None, install_dir: str | None) -> None:
    _WORKER["card"] = card
    _WORKER["formats"] = formats
    _WORKER["install_dir"] = install_dir


def _work(unit: Unit) -> UnitResult:
    return convert_unit(unit, _WORKER["card"], _WORKER["formats"], _WORKER["install_dir"])


def iter_unit_results(
    inputs: Sequence[Path | str], card: Any, *, workers: int = 1, formats: Sequence[str] | None = None,
    units: list[Unit] | None = None, install_dir: str | None = None,
) -> Iterator[UnitResult]:
    """Per-unit results in unit order (the building block of ``iter_convert`` and ``convert``)."""
    units = units if units is not None else iter_units(inputs, formats)
    if workers <= 1 or len(units) <= 1:
        for unit in units:
            yield convert_unit(unit, card, formats, install_dir)
        return
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    with ctx.Pool(processes=workers, initializer=_init_worker, initargs=(card, formats, install_dir)) as pool:
        yield from pool.imap(_work, units, chunksize=1)


def iter_convert(
    inputs: Sequence[Path], card: Any, *, workers: int = 1, formats: Sequence[str] | None = None,
    install_dir: str | None = None,
) -> Iterator[Conversation | Rejection]:
    """Every input record as a Conversation or a Rejection, in deterministic order (any worker count).

    ``install_dir`` fixes the harness folder named in the system prompt (default: the card's
    ``default_install_dir()``, which depends on ``$HARNESSFIT_HOME``); fix it for machine-independent output."""
    for res in iter_unit_results(inputs, card, workers=workers, formats=formats, install_dir=install_dir):
        yield from res.outputs


ProgressFn = Callable[[UnitResult], None]
