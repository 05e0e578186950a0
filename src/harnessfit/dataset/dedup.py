"""Duplicate removal: exact (SHA-256 of a normalised conversation) then near (MinHash LSH, datasketch).

Streaming and linear: each conversation is hashed once and queried against an LSH index (no all-pairs
comparison). The first conversation in the build's deterministic order is kept; a later twin becomes a ledger
row (``duplicate_exact`` / ``duplicate_near``) naming the kept id.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson
from datasketch import MinHash, MinHashLSH

from harnessfit.convert.conversation import Conversation, ConversationMeta
from harnessfit.convert.rejection import Reason, Rejection

__all__ = ["normalised_text", "exact_key", "minhash_of", "Deduper"]

_WS = re.compile(r"\s+")
NEAR_CHARS = 200_000
_WORD = re.compile(r"\w+|[^\w\s]")


def normalised_text(conv: Conversation) -> str:
    """The conversation's content without the system prompt and tool schemas (same for every conversation of one
    harness) and with call ids dropped (they differ between two runs of the same work): role + text + tool name +
    arguments, whitespace collapsed, lower-cased."""
    parts: list[str] = []
    for m in conv.messages:
        role = m.get("role")
        if role == "system":
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(f"<{role}>")
        if isinstance(content, str):
            parts.append(content)
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or {}
            args = fn.get("arguments")
            parts.append(f"{fn.get('name')}({args if isinstance(args, str) else orjson.dumps(args).decode()})")
    return _WS.sub(" ", "\n".join(parts)).strip().lower()


def exact_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def minhash_of(text: str, *, num_perm: int, shingle_size: int, seed: int) -> MinHash:
    words = _WORD.findall(text)
    if len(words) < shingle_size:
        shingles = {" ".join(words)}
    else:
        shingles = {" ".join(words[i:i + shingle_size]) for i in range(len(words) - shingle_size + 1)}
    mh = MinHash(num_perm=num_perm, seed=seed)
    mh.update_batch([s.encode("utf-8", "surrogatepass") for s in sorted(shingles)])
    return mh


class Deduper:
    """Keeps the first of each exact or near-duplicate family; ``check`` returns a Rejection for a dropped twin."""

    def __init__(self, *, exact: bool = True, near: bool = True, threshold: float = 0.85, num_perm: int = 128,
                 shingle_size: int = 5, seed: int = 1) -> None:
        self.exact = exact
        self.near = near
        self.num_perm = num_perm
        self.shingle_size = shingle_size
        self.seed = seed
        self.threshold = threshold
        self._seen: dict[str, str] = {}
        self._lsh = MinHashLSH(threshold=threshold, num_perm=num_perm) if near else None
        self._hashes: dict[str, MinHash] = {}

    def signature(self, conv: Conversation) -> tuple[str, Any]:
        """Hashes of one conversation (pure, so workers can compute them in parallel)."""
        text = normalised_text(conv)
        # near-duplicates are judged on the first NEAR_CHARS characters (the exact key covers everything): keeps
        # MinHash cost bounded per conversation
        mh = minhash_of(text[:NEAR_CHARS], num_perm=self.num_perm, shingle_size=self.shingle_size, seed=self.seed) if self.near else None
        return exact_key(text), ((mh.hashvalues, mh.scheme) if mh is not None else None)

    def check(self, conv: Conversation, signature: tuple[str, Any] | None = None) -> Rejection | None:
        """Record ``conv`` as kept (None) or return the ledger row of a dropped twin."""
        return self.check_signed(conv.id, conv.meta, signature if signature is not None else self.signature(conv))

    def check_signed(self, conv_id: str, meta: ConversationMeta, signature: tuple[str, Any]) -> Rejection | None:
        """Same as ``check`` with precomputed hashes (from a worker)."""
        key, hv = signature
        if self.exact and key in self._seen:
            return _dup(conv_id, meta, Reason.duplicate_exact, self._seen[key], "identical to an earlier conversation after normalisation")
        if self._lsh is not None:
            mh = MinHash(num_perm=self.num_perm, seed=self.seed, hashvalues=hv[0], scheme=hv[1])
            candidates = sorted(self._lsh.query(mh))
            best = None
            for cid in candidates:  # LSH candidates are few; confirm with the estimated Jaccard and keep the closest
                j = mh.jaccard(self._hashes[cid])
                if j >= self.threshold and (best is None or j > best[0]):
                    best = (j, cid)
            if best is not None:
                return _dup(conv_id, meta, Reason.duplicate_near, best[1], f"near-duplicate (estimated Jaccard {best[0]:.2f})")
            self._lsh.insert(conv_id, mh)
            self._hashes[conv_id] = mh
        self._seen.setdefault(key, conv_id)
        return None


def _dup(conv_id: str, meta: ConversationMeta, reason: Reason, kept: str, detail: str) -> Rejection:
    return Rejection(
        record_id=conv_id, source=meta.source, file=meta.file, line_start=meta.line_start, line_end=meta.line_end, reason=reason, detail=detail,
        repair_hint="nothing to repair: the kept twin carries the same work", kept_id=kept,
    )
