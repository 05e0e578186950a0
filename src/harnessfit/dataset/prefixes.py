"""Exact prefixes of rejected trajectories in the build: redacted, deduplicated, split with their root request, and
exported as SFT records and decision points (never as conversations).

Why apart from the conversations: a prefix is not an input record (the build's identity ``read = kept + rejected``
counts trajectories, and its trajectory is already in the ledger), and it must never take a complete conversation's
place in deduplication. So it travels beside the records through the build's stages (``dataset.stages``) and gets
the treatment a conversation gets where it matters for training data:

- redaction with the build's ``Redactor``, where the conversations are redacted (in the workers), counted in the same
  manifest counters (``Prefix``);
- exact deduplication among prefixes (the exact key of the redacted text, ``dedup.exact_key``): a second identical
  prefix adds nothing (two copies of one session, rejected at the same call) (``PrefixSpool``);
- the grouped split: a prefix lands in the split of its root request, so a task never crosses splits;
- export: one SFT record and one decision point per label, in the same files and record shapes as a conversation's,
  after the split's complete conversations, written and counted by the conversations' own export
  (``exports.write_exports``; ``PrefixSpool.in_split`` hands it the split's prefixes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from harnessfit.core.conversation import Conversation
from harnessfit.core.ids import session_links
from harnessfit.dataset.dedup import exact_key, normalised_text

__all__ = ["Prefix", "PrefixRow", "PrefixSpool"]


@dataclass(frozen=True, slots=True)
class Prefix:
    """A prefix on its way through the record stages (not a ``Conversation`` row: nothing counts or dedups it as
    one)."""

    conversation: Conversation


@dataclass(slots=True)
class PrefixRow:
    """A redacted prefix: its id, root request, exact key, JSON line, and what redaction found and replaced."""

    id: str
    group: str
    key: str
    body: bytes
    changed: bool
    found: dict[str, int]
    replaced: dict[str, int]
    links: tuple[str | None, str | None] = (None, None)  # (own session, parent session): ``core.ids.session_links``

    @classmethod
    def of(cls, conv: Conversation, redactor: Any | None) -> PrefixRow:
        found: dict[str, int] = {}
        replaced: dict[str, int] = {}
        out = conv
        if redactor is not None:
            res = redactor.redact(conv)
            out, found, replaced = res.conversation, dict(res.found), dict(res.replaced)
        return cls(
            out.id,
            out.meta.root_request_id,
            exact_key(normalised_text(out)),
            orjson.dumps(out.model_dump(mode="json")),
            out is not conv,
            found,
            replaced,
            session_links(out.meta.transformations),
        )


class PrefixSpool:
    """Prefixes waiting for their split (in input order), and what happened to them (``counts``)."""

    def __init__(self, *, exact_dedup: bool = True) -> None:
        self.exact_dedup = exact_dedup
        self.items: list[tuple[str, str, bytes]] = []  # id, root request, JSON line
        self.counts: Counter[str] = Counter()
        self.found: Counter[str] = Counter()
        self.replaced: Counter[str] = Counter()
        self._keys: set[str] = set()
        self.links: list[tuple[str, str | None, str | None]] = []  # group, own session, parent session

    def take(self, row: PrefixRow) -> None:
        self.counts["read"] += 1
        self.counts["redacted"] += int(row.changed)
        self.found.update(row.found)
        self.replaced.update(row.replaced)
        if self.exact_dedup:
            if row.key in self._keys:
                self.counts["duplicate_exact"] += 1
                return
            self._keys.add(row.key)
        self.counts["kept"] += 1
        self.items.append((row.id, row.group, row.body))
        self.links.append((row.group, *row.links))

    def groups(self) -> list[str]:
        return [g for _, g, _ in self.items]

    def in_split(self, split: str, assignment: dict[str, str]) -> Iterator[bytes]:
        """The JSON lines of the kept prefixes whose root request ``assignment`` puts in ``split``, in input order
        (``exports.write_exports`` writes their records with the conversations' own export)."""
        return (body for _, group, body in self.items if assignment[group] == split)

    def summary(self, per_split: dict[str, dict[str, int]]) -> dict[str, int]:
        """What happened to the prefixes: this spool's counts, and the records the export wrote of them (summed from
        ``write_exports``' per-split ``prefix_*`` counts, so each is counted once)."""
        c = self.counts
        out = {k: c[k] for k in ("read", "redacted", "duplicate_exact", "kept")}
        for kind in ("sft", "decision_points"):
            out[kind] = sum(n.get(f"prefix_{kind}", 0) for n in per_split.values())
        return out
