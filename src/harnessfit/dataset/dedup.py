"""Duplicate removal: exact (SHA-256 of a normalised conversation) then near (MinHash LSH, datasketch).

Streaming and linear: each conversation is hashed once and queried against an LSH index (no all-pairs
comparison). The first conversation in the build's deterministic order is kept; a later twin becomes a ledger
row (``duplicate_exact`` / ``duplicate_near``) naming the kept id.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np
import orjson
from datasketch import MinHash, MinHashLSH
from datasketch.minhash import _fmix

from harnessfit.convert.conversation import Conversation, ConversationMeta
from harnessfit.convert.rejection import Reason, Rejection

__all__ = ["normalised_text", "exact_key", "shingles_of", "minhash_of", "Deduper"]

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


class _ShingleHashes:
    """Memo of datasketch's default 32-bit shingle hash (first 4 bytes of SHA-1, little-endian).

    Why: SHA-1 per shingle in Python is most of the near-dedup cost, and a fleet's conversations share most of their
    shingles (the same files read, the same tool output, re-runs of one task). The memo is a pure function cache, so
    results are identical with or without it; it is cleared when it grows past ``limit`` entries (bounded memory)."""

    def __init__(self, limit: int = 1_000_000) -> None:
        self.limit = limit
        self._memo: dict[str, int] = {}

    def __call__(self, shingles: set[str]) -> np.ndarray:
        memo = self._memo
        get = memo.get
        out = [get(s, -1) for s in shingles]
        if -1 in out:
            missing = [s for s, h in zip(shingles, out) if h == -1]
            digests = b"".join([_sha1(s.encode("utf-8", "surrogatepass")).digest() for s in missing])
            fresh = np.frombuffer(digests, dtype=_SHA1_FIRST_U32)["h"].tolist()
            if len(memo) + len(fresh) > self.limit:
                memo.clear()
            memo.update(zip(missing, fresh))
            it = iter(fresh)
            out = [h if h != -1 else next(it) for h in out]
        return np.array(out, dtype=np.uint32)


_sha1 = hashlib.sha1
_SHA1_FIRST_U32 = np.dtype([("h", "<u4"), ("rest", "V16")])  # one SHA-1 digest: its first 4 bytes as little-endian
_HASHES = _ShingleHashes()
_PERMUTATIONS: dict[tuple[int, int], np.ndarray] = {}
_ROWS = 4096  # shingles per numpy block: bounds the (rows x num_perm) temporary to 2 MiB at 128 permutations


def shingles_of(text: str, shingle_size: int) -> set[str]:
    """Word/punctuation ``shingle_size``-grams of ``text`` joined by one space (the whole text when shorter)."""
    words = _WORD.findall(text)
    if len(words) < shingle_size:
        return {" ".join(words)}
    return {" ".join(words[i:i + shingle_size]) for i in range(len(words) - shingle_size + 1)}


def minhash_of(text: str, *, num_perm: int, shingle_size: int, seed: int) -> MinHash:
    """datasketch ``MinHash(num_perm, seed)`` (default "affine32" scheme, SHA-1 32-bit hash) updated with every
    shingle of ``text``: the same hash values as ``update_batch`` over the encoded shingles, computed with memoised
    shingle hashes and one vectorised permutation pass instead of datasketch's per-shingle Python hashing."""
    perms = _PERMUTATIONS.get((num_perm, seed))
    if perms is None:
        perms = _PERMUTATIONS.setdefault((num_perm, seed), MinHash(num_perm=num_perm, seed=seed).permutations)
    a, b = perms
    hv = _fmix(_HASHES(shingles_of(text, shingle_size)), 32)
    mins = np.full(num_perm, np.iinfo(np.uint32).max, dtype=np.uint32)
    for i in range(0, len(hv), _ROWS):
        np.minimum(mins, (hv[i:i + _ROWS, None] * a + b).min(axis=0), out=mins)
    return MinHash(num_perm=num_perm, seed=seed, hashvalues=mins, permutations=perms, scheme="affine32")


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

    def signature(self, conv: Conversation, text: str | None = None) -> tuple[str, Any]:
        """Hashes of one conversation (pure, so workers can compute them in parallel). ``text``: its
        ``normalised_text`` when the caller already has it."""
        if text is None:
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
