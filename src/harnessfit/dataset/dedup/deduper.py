"""Duplicate removal, streaming and linear: each conversation is signed once (``signing``) and checked against what
was kept before it — exact key, then an LSH query confirmed by the estimated Jaccard similarity. The first
conversation in the build's deterministic order is kept; a later twin becomes a ledger row (``duplicate_exact`` /
``duplicate_near``) naming the kept id.

One exact-dedup mechanism, for the redacted text and for the text before redaction: ``check_signed`` takes the
signature of what is kept and, from the build, the exact key of the conversation *as read* (``raw_key``). A
conversation whose content as read equals an earlier one's gets that earlier one's verdict (the same reason and
kept id), so the build need not redact or re-sign it (the redact stage skips a content it has already seen).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from harnessfit.core.conversation import Conversation, ConversationMeta
from harnessfit.core.rejection import Reason, Rejection, reject
from harnessfit.dataset.dedup.definition import NEAR_CHARS, joined_text
from harnessfit.dataset.dedup.lsh import BandedIndex
from harnessfit.dataset.dedup.signing import BACKENDS, sign

__all__ = ["Signature", "Deduper"]

_SAME = "identical to an earlier conversation after normalisation"


class Signature(NamedTuple):
    """``key``: ``exact_key(normalised_text)``; ``minhash``: the MinHash of its first ``NEAR_CHARS`` characters
    (``None`` when near-dedup is off)."""

    key: str
    minhash: np.ndarray | None


class Deduper:
    """Keeps the first of each exact or near-duplicate family; ``check`` returns a Rejection for a dropped twin.
    ``backend``: how signatures are computed (``numba``, the default, or ``numpy``: the definition; same values)."""

    def __init__(
        self,
        *,
        exact: bool = True,
        near: bool = True,
        threshold: float = 0.85,
        num_perm: int = 128,
        shingle_size: int = 5,
        seed: int = 1,
        backend: str = "numba",
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"unknown dedup backend {backend!r}; known: {', '.join(BACKENDS)}")
        self.exact = exact
        self.near = near
        self.num_perm = num_perm
        self.shingle_size = shingle_size
        self.seed = seed
        self.threshold = threshold
        self.backend = backend
        self._kept: dict[str, str] = {}  # exact key -> id of the kept conversation
        self._as_read: dict[str, tuple[Reason, str]] = {}  # key as read -> the verdict its later twins get
        self._index = BandedIndex(threshold, num_perm) if near else None
        self._hashes: dict[str, np.ndarray] = {}  # MinHash values of the kept conversations

    def signature(self, conv: Conversation) -> Signature:
        """The hashes of one conversation (pure, so workers can compute them)."""
        return self.signatures([conv])[0]

    def signatures(self, convs: list[Conversation]) -> list[Signature]:
        """``signature`` of each of ``convs`` (one compiled call for all of them with the numba backend)."""
        found = sign(
            [joined_text(c) for c in convs],
            normalise=True,
            key=True,
            near_chars=NEAR_CHARS if self.near else 0,
            num_perm=self.num_perm,
            shingle_size=self.shingle_size,
            seed=self.seed,
            backend=self.backend,
        )
        return [Signature(key, hv if self.near else None) for key, hv in found]  # type: ignore[arg-type]

    def read_before(self, raw_key: str) -> bool:
        """Whether a conversation with this key as read was checked before (a later one is its twin)."""
        return self.exact and raw_key in self._as_read

    def check(self, conv: Conversation, signature: Signature | None = None) -> Rejection | None:
        """Record ``conv`` as kept (None) or return the ledger row of a dropped twin."""
        return self.check_signed(conv.id, conv.meta, signature if signature is not None else self.signature(conv))

    def check_signed(
        self, conv_id: str, meta: ConversationMeta, signature: Signature | tuple[str, Any], raw_key: str | None = None
    ) -> Rejection | None:
        """Same as ``check`` with precomputed hashes (from a worker). ``raw_key``: the exact key of the
        conversation before redaction (see the module docstring)."""
        if raw_key is not None and self.exact and (twin := self._as_read.get(raw_key)) is not None:
            return _dup(conv_id, meta, twin[0], twin[1], _SAME)
        verdict = self._judge(conv_id, meta, Signature(*signature))
        if self.exact and raw_key is not None:
            self._as_read[raw_key] = (verdict.reason, verdict.kept_id) if verdict else (Reason.duplicate_exact, conv_id)
        return verdict

    def _judge(self, conv_id: str, meta: ConversationMeta, signature: Signature) -> Rejection | None:
        key, hv = signature
        if self.exact and key in self._kept:
            return _dup(conv_id, meta, Reason.duplicate_exact, self._kept[key], _SAME)
        if self._index is not None:
            best = None
            for cid in sorted(self._index.query(hv)):  # candidates are few; confirm and keep the closest
                j = float(np.count_nonzero(hv == self._hashes[cid])) / float(self.num_perm)  # estimated Jaccard
                if j >= self.threshold and (best is None or j > best[0]):
                    best = (j, cid)
            if best is not None:
                return _dup(
                    conv_id, meta, Reason.duplicate_near, best[1], f"near-duplicate (estimated Jaccard {best[0]:.2f})"
                )
            self._index.insert(conv_id, hv)
            self._hashes[conv_id] = hv
        self._kept.setdefault(key, conv_id)
        return None


def _dup(conv_id: str, meta: ConversationMeta, reason: Reason, kept: str, detail: str) -> Rejection:
    return reject(
        meta, reason, detail, "nothing to repair: the kept twin carries the same work", record_id=conv_id, kept_id=kept
    )
