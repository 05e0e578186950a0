"""The convert run unit by unit: walk inputs into units, read + convert each (in worker processes or not), keep order.

Determinism: units are sorted (``iter_units``); each unit is converted independently; results are yielded in unit
order (``pipeline.ordered_map``, the one process pool of every stage), so the output bytes are the same for any
worker count. Memory: one unit's records at a time per worker (readers stream lines; a unit is one session file),
and at most a bounded window of finished results waiting for an earlier one.

Two ways to get the results, with the same order and the same content:

- objects — ``iter_unit_results`` (``UnitResult`` with ``Conversation | Rejection`` outputs) and ``iter_convert``
  (the outputs one by one): for callers that work on the records (the dataset build);
- bytes — ``iter_encoded_units`` (``EncodedUnit``: the unit's ``conversations.jsonl`` and ``ledger.jsonl`` lines
  already serialised, plus its counts): what ``convert()`` writes. With worker processes the objects would be
  pickled in the worker, unpickled in the parent and serialised there again; that cost 28 % more CPU than one
  worker and left the parent a serial share that capped 2-worker scaling near 1.6×. Encoding in the worker leaves
  the parent reading and writing bytes. ``encode_unit`` is the one place the line format is defined, so both paths agree.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from harnessfit.convert.policy import ConvertPolicy
from harnessfit.convert.wire import DEFAULT_POLICY, convert_trajectory
from harnessfit.convert.yields import FileYield, YieldReport
from harnessfit.core.conversation import Conversation
from harnessfit.core.rejection import Reason, Rejection, excerpt, reject
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.registry import Unit, iter_units, read_unit
from harnessfit.pipeline.executor import ordered_map

__all__ = [
    "UnitResult",
    "EncodedUnit",
    "convert_unit",
    "encode_unit",
    "iter_unit_results",
    "iter_encoded_units",
    "iter_convert",
    "unit_size",
    "units_per_task",
]


@dataclass
class UnitResult:
    """Everything one unit produced: ``read`` counts reader records, ``outputs`` has one item per read record;
    ``prefixes`` the exact prefixes of its rejected trajectories (``Conversation`` with ``meta.prefix``), and
    ``yields`` what became of every source call (``convert.yields``)."""

    index: int
    label: str
    format: str
    size: int
    read: int = 0
    outputs: list[Conversation | Rejection] = field(default_factory=list)
    prefixes: list[Conversation] = field(default_factory=list)
    yields: FileYield | None = None


def unit_size(path: Path) -> int:
    """A unit's bytes on disk (a folder unit: all files under it); 0 when it cannot be read."""
    try:
        if path.is_dir():
            return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        return path.stat().st_size
    except OSError:
        return 0


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cycle collector paused for one unit, then restored as it was.

    Why: reading and converting a unit allocates many small containers (parsed JSON, steps, messages) that all live
    until the unit is done, so the collector's periodic passes scan them again and again and free nothing; pausing
    it saved 10-15 % of convert CPU time here (``bench/convert_throughput.py``). Nothing changes in what is freed:
    reference counting frees every object as before, and the rare cycle (a caught exception's traceback) is collected
    by the first pass after the unit. A unit's memory is bounded by its outputs, which are kept until it ends anyway."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def convert_unit(
    unit: Unit,
    card: Any,
    formats: Sequence[str] | None = None,
    install_dir: str | None = None,
    policy: ConvertPolicy = DEFAULT_POLICY,
) -> UnitResult:
    """Read one unit and convert each trajectory; reader rejections pass through. ``install_dir`` is the harness
    folder the system prompt names (``None``: the card's default, where ``harnessfit harness install`` puts it);
    ``policy`` says which UI-only calls may be dropped (``convert.policy``). The cycle collector is paused meanwhile
    (``gc_paused``)."""
    with gc_paused():
        return _convert_unit(unit, card, formats, install_dir, policy)


def _convert_unit(
    unit: Unit, card: Any, formats: Sequence[str] | None, install_dir: str | None, policy: ConvertPolicy
) -> UnitResult:
    res = UnitResult(index=unit.index, label=unit.label, format="unknown", size=unit_size(unit.path))
    res.yields = FileYield(unit.label, "unknown")
    for record in read_unit(unit, formats):
        res.read += 1
        if isinstance(record, Trajectory):
            res.format = record.source
            try:
                outcome = convert_trajectory(record, card, install_dir=install_dir, policy=policy)
            except Exception as exc:  # noqa: BLE001 - a converter bug on odd data must not stop the run
                res.outputs.append(
                    reject(
                        record,
                        Reason.parse_error,
                        f"converter failed: {type(exc).__name__}: {excerpt(str(exc), 200)}",
                        "report this trajectory shape as a converter bug",
                    )
                )
                continue
            res.outputs.append(outcome.record)
            if outcome.prefix is not None:
                res.prefixes.append(outcome.prefix)
            res.yields.add(outcome.calls)
        else:
            if res.format == "unknown" and record.source != "unknown":
                res.format = record.source
            res.outputs.append(record)
    res.yields.format = res.format
    return res


@dataclass
class EncodedUnit:
    """One unit's result as the bytes ``convert()`` writes, plus its accounting.

    Why: a worker that returns these instead of ``Conversation`` objects spares the parent unpickling and
    re-serialising every record (the parent's serial share is what bounds multi-worker scaling). ``conversations``
    and ``ledger`` are JSONL (each line ends with ``\\n``) in output order; ``reasons`` counts rejections by reason
    value; ``examples`` keeps the first rejection of each reason in this unit (for the ledger summary); ``prefixes``
    is the unit's ``prefixes.jsonl`` lines and ``yields`` its per-call accounting.
    """

    index: int
    label: str
    format: str
    size: int
    read: int = 0
    accepted: int = 0
    conversations: bytes = b""
    ledger: bytes = b""
    reasons: dict[str, int] = field(default_factory=dict)
    examples: dict[str, Rejection] = field(default_factory=dict)
    prefixes: bytes = b""
    yields: FileYield | None = None

    @property
    def rejected(self) -> int:
        return sum(self.reasons.values())


def line_reference(item: Conversation | Rejection) -> bytes:
    """The definition of one output line: the record's JSON form (``model_dump(mode="json")``), compact."""
    return orjson.dumps(item.model_dump(mode="json"))


_CONVERSATION_FIELDS = tuple(Conversation.model_fields)
_PLAIN_ONLY = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS


def _line(item: Conversation | Rejection) -> bytes:
    """``line_reference``, faster for a conversation: its messages and tools are plain JSON values, which orjson
    writes as they are instead of pydantic walking them first. Anything orjson would write differently from pydantic
    (a date, a subclass, bytes, a non-string key…) raises with these options, and then the reference writes the line
    (``tests/convert/test_units.py`` holds both equal)."""
    if type(item) is Conversation:
        try:
            return orjson.dumps(
                {
                    name: v.model_dump(mode="json") if isinstance(v := getattr(item, name), BaseModel) else v
                    for name in _CONVERSATION_FIELDS
                },
                option=_PLAIN_ONLY,
            )
        except TypeError:
            pass
    return line_reference(item)


def encode_unit(res: UnitResult) -> EncodedUnit:
    """Serialise one unit's outputs: one compact JSON line per record (key order kept), conversations and rejections
    in separate blobs, each in the unit's output order."""
    conv: list[bytes] = []
    led: list[bytes] = []
    reasons: dict[str, int] = {}
    examples: dict[str, Rejection] = {}
    for item in res.outputs:
        if isinstance(item, Conversation):
            conv.append(_line(item))
        else:
            reason = item.reason.value
            reasons[reason] = reasons.get(reason, 0) + 1
            examples.setdefault(reason, item)
            led.append(_line(item))
    pre = [_line(p) for p in res.prefixes]
    return EncodedUnit(
        index=res.index,
        label=res.label,
        format=res.format,
        size=res.size,
        read=res.read,
        accepted=len(conv),
        conversations=b"\n".join([*conv, b""]) if conv else b"",
        ledger=b"\n".join([*led, b""]) if led else b"",
        reasons=reasons,
        examples=examples,
        prefixes=b"\n".join([*pre, b""]) if pre else b"",
        yields=res.yields,
    )


_WORKER: dict[str, Any] = {}


def _init_worker(
    card: Any, formats: Sequence[str] | None, install_dir: str | None, policy: ConvertPolicy = DEFAULT_POLICY
) -> None:
    _WORKER["card"] = card
    _WORKER["formats"] = formats
    _WORKER["install_dir"] = install_dir
    _WORKER["policy"] = policy


def _work(units: list[Unit]) -> list[UnitResult]:
    return [
        convert_unit(u, _WORKER["card"], _WORKER["formats"], _WORKER["install_dir"], _WORKER["policy"]) for u in units
    ]


def _work_encoded(units: list[Unit]) -> list[EncodedUnit]:
    return [encode_unit(r) for r in _work(units)]


def _resolved_install_dir(card: Any, install_dir: str | None) -> str | None:
    """The card's default harness folder, computed once per run instead of once per trajectory (it resolves
    ``$HARNESSFIT_HOME`` on the file system: ~15 % of a 1-worker run). Same value, so the same bytes."""
    if install_dir is not None:
        return install_dir
    default = getattr(card, "default_install_dir", None)
    return default() if callable(default) else None


def units_per_task(n_units: int, workers: int) -> int:
    """Units per worker task: a few per task cut the pool's per-task traffic; at most 1/16 of a worker's share, so
    one long session does not leave the other worker idle at the end."""
    return max(1, min(8, n_units // (workers * 16)))


def _in_unit_order(
    work: Callable[[list[Unit]], list[Any]],
    units: list[Unit],
    card: Any,
    workers: int,
    formats: Sequence[str] | None,
    install_dir: str | None,
    size: int | None,
    policy: ConvertPolicy = DEFAULT_POLICY,
) -> Iterator[Any]:
    """``work`` over chunks of ``units`` (in worker processes when ``workers > 1``), results in unit order."""
    size = max(1, size if size is not None else units_per_task(len(units), workers))
    chunks = [units[i : i + size] for i in range(0, len(units), size)]
    for results in ordered_map(
        work,
        chunks,
        workers=min(workers, len(chunks)),
        initializer=_init_worker,
        initargs=(card, formats, install_dir, policy),
    ):
        yield from results


def iter_unit_results(
    inputs: Sequence[Path | str],
    card: Any,
    *,
    workers: int = 1,
    formats: Sequence[str] | None = None,
    units: list[Unit] | None = None,
    install_dir: str | None = None,
    policy: ConvertPolicy = DEFAULT_POLICY,
) -> Iterator[UnitResult]:
    """Per-unit results in unit order (the building block of ``iter_convert``). With workers the objects cross the
    process boundary by pickle; ``iter_encoded_units`` is the cheaper path when only the output bytes are needed."""
    units = units if units is not None else iter_units(inputs, formats)
    install_dir = _resolved_install_dir(card, install_dir)
    if workers <= 1 or len(units) <= 1:
        for unit in units:
            yield convert_unit(unit, card, formats, install_dir, policy)
        return
    yield from _in_unit_order(_work, units, card, workers, formats, install_dir, None, policy)


def iter_encoded_units(
    inputs: Sequence[Path | str],
    card: Any,
    *,
    workers: int = 1,
    formats: Sequence[str] | None = None,
    units: list[Unit] | None = None,
    install_dir: str | None = None,
    chunksize: int | None = None,
    policy: ConvertPolicy = DEFAULT_POLICY,
) -> Iterator[EncodedUnit]:
    """Per-unit results already serialised (``encode_unit``), in unit order; serialised in the workers when there
    are any. The bytes are the same for any worker count, and the same as ``encode_unit`` of ``iter_unit_results``.
    ``chunksize``: units per worker task (default: a few, from the number of units and workers)."""
    units = units if units is not None else iter_units(inputs, formats)
    install_dir = _resolved_install_dir(card, install_dir)
    if workers <= 1 or len(units) <= 1:
        for unit in units:
            yield encode_unit(convert_unit(unit, card, formats, install_dir, policy))
        return
    yield from _in_unit_order(_work_encoded, units, card, workers, formats, install_dir, chunksize, policy)


def iter_convert(
    inputs: Sequence[Path],
    card: Any,
    *,
    workers: int = 1,
    formats: Sequence[str] | None = None,
    install_dir: str | None = None,
    prefixes: bool = False,
    policy: ConvertPolicy = DEFAULT_POLICY,
    yields: YieldReport | None = None,
) -> Iterator[Conversation | Rejection]:
    """Every input record as a Conversation or a Rejection, in deterministic order (any worker count). With
    ``prefixes``, each unit's exact prefixes of rejected trajectories follow its records (``Conversation`` objects
    with ``meta.prefix`` set: they are no input records, so count them apart). ``yields`` collects every unit's call
    accounting (``convert.yields``).

    ``install_dir`` fixes the harness folder named in the system prompt (default: the card's
    ``default_install_dir()``, which depends on ``$HARNESSFIT_HOME``); fix it for machine-independent output."""
    for res in iter_unit_results(
        inputs, card, workers=workers, formats=formats, install_dir=install_dir, policy=policy
    ):
        if yields is not None and res.yields is not None:
            yields.add(res.yields)
        yield from res.outputs
        if prefixes:
            yield from res.prefixes


ProgressFn = Callable[[UnitResult | EncodedUnit], None]
