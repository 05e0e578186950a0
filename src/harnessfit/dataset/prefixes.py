"""Exact prefixes of rejected trajectories in the build: redacted, deduplicated, split with their root request, and
exported as SFT records and decision points (never as conversations).

Why a stage of its own: a prefix is not an input record (the build's identity ``read = kept + rejected`` counts
trajectories, and its trajectory is already in the ledger), and it must never take a complete conversation's place in
deduplication. So the build diverts prefixes from the conversion stream (``divert``), and this spool gives them the
same treatment a conversation gets where it matters for training data:

- redaction with the build's ``Redactor`` (same rules, counted in the same manifest counters);
- exact deduplication among prefixes (the same normalised text as ``dedup.exact_key``): a second identical prefix adds
  nothing (two copies of one session, rejected at the same call);
- the grouped split: a prefix lands in the split of its root request, so a task never crosses splits;
- export: one SFT record per label and one decision point per label, in the same files and the same record shapes
  as a conversation's (``exports.ConversationExport``), after the split's complete conversations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from harnessfit.core.conversation import Conversation
from harnessfit.core.rejection import Rejection
from harnessfit.dataset.dedup import exact_key, normalised_text
from harnessfit.dataset.exports import ConversationExport

__all__ = ["PrefixSpool", "divert", "is_prefix"]


def is_prefix(item: Any) -> bool:
    return isinstance(item, Conversation) and item.meta.prefix is not None


def divert(stream: Iterable[Conversation | Rejection], spool: PrefixSpool) -> Iterator[Conversation | Rejection]:
    """The conversion stream without its prefixes, which go to ``spool``."""
    for item in stream:
        if is_prefix(item):
            spool.add(item)  # type: ignore[arg-type]
        else:
            yield item


class PrefixSpool:
    """Prefixes waiting for their split (as JSON bytes), and what happened to them (``counts``)."""

    def __init__(self, redactor: Any | None, *, exact_dedup: bool = True) -> None:
        self.redactor = redactor
        self.exact_dedup = exact_dedup
        self.items: list[tuple[str, str, bytes]] = []  # id, root request, JSON bytes
        self.counts: Counter[str] = Counter()
        self.found: Counter[str] = Counter()
        self.replaced: Counter[str] = Counter()
        self._keys: set[str] = set()

    def add(self, conv: Conversation) -> None:
        self.counts["read"] += 1
        if self.redactor is not None:
            res = self.redactor.redact(conv)
            self.found.update(res.found)
            self.replaced.update(res.replaced)
            if res.conversation is not conv:
                self.counts["redacted"] += 1
            conv = res.conversation
        if self.exact_dedup:
            key = exact_key(normalised_text(conv))
            if key in self._keys:
                self.counts["duplicate_exact"] += 1
                return
            self._keys.add(key)
        self.counts["kept"] += 1
        self.items.append((conv.id, conv.meta.root_request_id, orjson.dumps(conv.model_dump(mode="json"))))

    def groups(self) -> list[str]:
        return [g for _, g, _ in self.items]

    def export(self, split: str, assignment: dict[str, str], sft: Any, dps: Any,
               parquet: dict[str, Any] | None) -> tuple[int, int]:
        """Write the SFT records and decision points of this split's prefixes; returns (sft, decision points)."""
        n_sft = n_dp = 0
        for _, group, body in self.items:
            if assignment[group] != split:
                continue
            ex = ConversationExport(orjson.loads(body), split)
            for rid, line, row in ex.sft():
                sft.mark(rid)
                sft.write(line + b"\n")
                n_sft += 1
                if parquet:
                    parquet["sft"].add(row)
            for rid, line, row in ex.decision_points():
                dps.mark(rid)
                dps.write(line + b"\n")
                n_dp += 1
                if parquet:
                    parquet["decision_points"].add(row)
        self.counts[f"sft_{split}"] += n_sft
        self.counts[f"decision_points_{split}"] += n_dp
        return n_sft, n_dp

    def summary(self) -> dict[str, int]:
        c = self.counts
        return {"read": c["read"], "redacted": c["redacted"], "duplicate_exact": c["duplicate_exact"],
                "kept": c["kept"], "sft": sum(v for k, v in c.items() if k.startswith("sft_")),
                "decision_points": sum(v for k, v in c.items() if k.startswith("decision_points_"))}
