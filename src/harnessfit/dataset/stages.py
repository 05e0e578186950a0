"""The build's record stages: convert → sign → redact (per record, in worker processes when asked) → dedup (in
order, in this process). The rest of the build (split, export, manifest) works on what ``Collector`` keeps.

- ``Redact.run`` — the per-record work: each conversation's exact key and MinHash *as read* (32 per compiled
  call), redaction, a new signature when redaction changed something, and its JSON line. A conversation whose
  content as read this process has already seen is not redacted: the dedup stage gives it its first twin's
  verdict (``Deduper.check_signed``'s ``raw_key``), whatever redaction would make of it.
- ``records`` — that work over the inputs, in this process or in workers (one pool, ``pipeline.ordered_map``,
  each worker converting and redacting whole units); rows come back in input order either way.
- ``Collector`` — in order: accounting, the dedup verdict, the ledger, and the kept conversations' lines (the spool);
  beside the records, each unit's exact prefixes of rejected trajectories (``dataset.prefixes``: redacted here,
  deduplicated and spooled by the collector) and its per-call accounting (``convert.yields.FileYield``).

Every stage's seconds go to one ``StageClock`` (workers send theirs with their rows).
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

import orjson

from harnessfit.convert.ledger import Accounting
from harnessfit.convert.policy import ConvertPolicy
from harnessfit.convert.units import convert_unit, units_per_task
from harnessfit.convert.wire import DEFAULT_POLICY
from harnessfit.convert.yields import FileYield, YieldReport
from harnessfit.core.conversation import Conversation, ConversationMeta
from harnessfit.core.ids import session_links
from harnessfit.core.rejection import Rejection
from harnessfit.dataset.dedup import Deduper, Signature
from harnessfit.dataset.prefixes import Prefix, PrefixRow, PrefixSpool
from harnessfit.dataset.redact import Redactor
from harnessfit.formats.registry import Unit
from harnessfit.pipeline import StageClock, ordered_map

__all__ = ["Settings", "Converted", "Redact", "records", "Collector", "SIGN_BATCH"]

SIGN_BATCH = 32  # conversations signed per compiled call (a call has a fixed cost)


@dataclass(frozen=True)
class Settings:
    """What the record stages need, in a form a worker process can receive."""

    card: Any
    install_dir: str | None
    redaction: dict[str, Any] | None  # Redactor keyword arguments; None: redaction off
    dedup: dict[str, Any]  # Deduper keyword arguments
    policy: ConvertPolicy = DEFAULT_POLICY  # which UI-only calls conversion drops


@dataclass(slots=True)
class Converted:
    """A conversation after redaction: its JSON line (``None`` when skipped as a repeat as read), its key as read
    (``None`` when exact dedup is off), its signature after redaction, and what redaction found and replaced."""

    id: str
    meta: ConversationMeta
    body: bytes | None
    raw_key: str | None
    signature: Signature | None
    changed: bool
    found: dict[str, int]
    replaced: dict[str, int]


class Redact:
    """The per-record stage (see the module docstring); one per process."""

    def __init__(self, settings: Settings, clock: StageClock) -> None:
        self.settings = settings
        self.clock = clock
        self.redactor = Redactor(**settings.redaction) if settings.redaction is not None else None
        self.signer = Deduper(**settings.dedup)
        self.seen: set[str] = set()  # keys as read this process has redacted

    def run(self, items: Iterable[Conversation | Rejection]) -> Iterator[Conversation | Rejection | Converted]:
        it = iter(items)
        while batch := list(islice(it, SIGN_BATCH)):
            convs = [x for x in batch if isinstance(x, Conversation)] if self.signer.exact else []
            with self.clock("dedup"):
                raw = iter(self.signer.signatures(convs) if convs else ())
            for item in batch:
                yield self._one(item, next(raw)) if convs and isinstance(item, Conversation) else self._plain(item)

    def _plain(self, item: Any) -> Any:
        if isinstance(item, Rejection | FileYield):
            return item
        if isinstance(item, Prefix):
            with self.clock("redact"):
                return PrefixRow.of(item.conversation, self.redactor)
        return self._one(item, None)

    def _one(self, conv: Conversation, raw: Signature | None) -> Converted:
        if raw is not None:
            if raw.key in self.seen:  # a repeat as read: dedup drops it as its first twin's twin
                return Converted(conv.id, conv.meta, None, raw.key, None, False, {}, {})
            self.seen.add(raw.key)
        out, found, replaced = conv, Counter(), Counter()
        if self.redactor is not None:
            with self.clock("redact"):
                res = self.redactor.redact(conv)
            out, found, replaced = res.conversation, res.found, res.replaced
        changed = out is not conv
        if raw is None or changed:  # the signature as read still holds when redaction changed nothing
            with self.clock("dedup"):
                sig = self.signer.signature(out)
        else:
            sig = raw
        return Converted(
            out.id,
            out.meta,
            orjson.dumps(out.model_dump(mode="json")),
            raw.key if raw else None,
            sig,
            changed,
            dict(found),
            dict(replaced),
        )


_WORKER: dict[str, Redact] = {}


def _start_worker(settings: Settings) -> None:
    _WORKER["stage"] = Redact(settings, StageClock())


def _unit_items(units: Iterable[Unit], formats: list[str] | None, settings: Settings) -> Iterator[Any]:
    """Each unit's records, then its exact prefixes (``Prefix``) and its per-call accounting (``FileYield``)."""
    for unit in units:
        res = convert_unit(unit, settings.card, formats, settings.install_dir, settings.policy)
        yield from res.outputs
        for p in res.prefixes:
            yield Prefix(p)
        if res.yields is not None:
            yield res.yields


def _run_task(task: tuple[Any, list[Unit]]) -> tuple[list[Any], tuple[dict[str, float], dict[str, float]]]:
    """One worker task: convert and redact a few units; the rows and the seconds they took."""
    stage = _WORKER["stage"]
    formats, units = task
    rows = list(stage.run(stage.clock.timed("convert", _unit_items(units, formats, stage.settings))))
    return rows, stage.clock.take()


def records(
    groups: list[tuple[list[str] | None, list[Unit]]] | None,
    items: Iterable[Conversation | Rejection] | None,
    settings: Settings,
    workers: int,
    clock: StageClock,
) -> Iterator[Rejection | Converted | PrefixRow | FileYield]:
    """Every input record through convert → sign → redact, in input order. ``groups``: units to read and the formats
    to read them with; ``items``: records already converted (tests, in-memory sources), handled in this process."""
    if items is not None or workers <= 1 or groups is None:
        if items is None:
            items = (out for formats, units in groups or () for out in _unit_items(units, formats, settings))
        yield from Redact(settings, clock).run(clock.timed("convert", items))  # type: ignore[misc]
        return
    size = units_per_task(sum(len(units) for _, units in groups), workers)
    tasks = [(formats, units[i : i + size]) for formats, units in groups for i in range(0, len(units), size)]
    for rows, seconds in ordered_map(
        _run_task, tasks, workers=workers, initializer=_start_worker, initargs=(settings,)
    ):
        clock.merge(seconds)
        yield from rows


class Collector:
    """The in-order stage: counts every record (``accounting``), asks ``deduper`` about each conversation, keeps
    the ledger rows and the kept conversations' lines (``spool``: id, group, line, source), and the redaction
    totals of the conversations that reached redaction; beside them the exact prefixes (``prefixes``) and the
    per-call accounting of every unit (``yields``)."""

    def __init__(self, deduper: Deduper, clock: StageClock, *, freeze_every: int = 0, fidelity: str = "byte") -> None:
        self.deduper = deduper
        self.prefixes = PrefixSpool(exact_dedup=deduper.exact)
        self.yields = YieldReport(fidelity=fidelity)
        self.clock = clock
        self.accounting = Accounting()
        self.ledger: list[Rejection] = []
        self.spool: list[tuple[str, str, bytes, str]] = []
        self.links: list[tuple[str, str | None, str | None]] = []  # kept conversations' group, own/parent session
        self.found: Counter[str] = Counter()
        self.replaced: Counter[str] = Counter()
        self.redacted = 0
        self.freeze_every = freeze_every
        self.n = 0

    def take(self, row: Rejection | Converted | PrefixRow | FileYield) -> None:
        if isinstance(row, PrefixRow):
            self.prefixes.take(row)
            return
        if isinstance(row, FileYield):
            self.yields.add(row)
            return
        self.n += 1
        if self.freeze_every and self.n % self.freeze_every == 0:
            gc.freeze()  # see build._FREEZE_EVERY
        if isinstance(row, Rejection):
            self.accounting.record(row.file, row.source, str(row.reason))
            self.ledger.append(row)
            return
        meta = row.meta
        self.accounting.record(meta.file, meta.source)
        if row.raw_key is None or not self.deduper.read_before(row.raw_key):
            self.redacted += int(row.changed)
            self.found.update(row.found)
            self.replaced.update(row.replaced)
        with self.clock("dedup"):
            dup = self.deduper.check_signed(row.id, meta, row.signature, raw_key=row.raw_key)  # type: ignore[arg-type]
        if dup is not None:
            self.accounting.drop(meta.file, meta.source, str(dup.reason))
            self.ledger.append(dup)
            return
        self.spool.append((row.id, meta.root_request_id, row.body, meta.source))  # type: ignore[arg-type]
        self.links.append((meta.root_request_id, *session_links(meta.transformations)))  # type: ignore[union-attr]

    def joined(self) -> dict[str, str]:
        """For the grouped split: the group of each kept sub-agent run (``subagent_of:<session>``) → the group of
        the conversation of that session (``session:<session>``), when one is kept (the first in input order)."""
        every = [*self.links, *self.prefixes.links]
        sessions: dict[str, str] = {}
        for group, own, _ in every:
            if own is not None:
                sessions.setdefault(own, group)
        out: dict[str, str] = {}
        for group, _, parent in every:
            if parent is not None and parent in sessions and sessions[parent] != group:
                out.setdefault(group, sessions[parent])
        return out
