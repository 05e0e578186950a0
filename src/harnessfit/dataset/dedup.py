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

from harnessfit.core.conversation import Conversation, ConversationMeta
from harnessfit.core.rejection import Reason, Rejection

__all__ = ["normalised_text", "exact_key", "token_hashes", "shingle_hashes", "minhash_of", "minhash_values", "Deduper"]

_WS = re.compile(r"\s+")
NEAR_CHARS = 200_000
_WORD = re.compile(r"\w+|[^\w\s]")


def _joined(conv: Conversation) -> str:
    """The conversation's content before whitespace collapsing and lower-casing (see ``normalised_text``)."""
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
    return "\n".join(parts)


def normalised_text(conv: Conversation) -> str:
    """The conversation's content without the system prompt and tool schemas (same for every conversation of one
    harness) and with call ids dropped (they differ between two runs of the same work): role + text + tool name +
    arguments, whitespace collapsed, lower-cased. (The definition; the build computes it, its key and its MinHash
    in one compiled pass, ``Deduper.signature``.)"""
    # str.split() splits on exactly the characters re's \s matches (str.isspace), so this equals
    # _WS.sub(" ", text).strip(), at a fraction of the cost
    return " ".join(_joined(conv).split()).lower()


def exact_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_U64 = np.uint64
_P = _U64(0x100000001B3)  # odd: invertible modulo 2**64
_P_INV = _U64(pow(0x100000001B3, -1, 2**64))
_TOKEN_SEED = _U64(0x9E3779B97F4A7C15)
# ASCII character classes of the tokeniser (0 space, 1 word, 2 punctuation); other code points are classified by
# the same predicates ``re`` uses for ``\w`` (str.isalnum() or "_") and ``\s`` (str.isspace())
_ASCII_CLASS = np.array([0 if chr(c).isspace() else 1 if (chr(c).isalnum() or c == 95) else 2 for c in range(128)],
                        dtype=np.uint8)
_PERMUTATIONS: dict[tuple[int, int], np.ndarray] = {}


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (a bijection on uint64 with full avalanche), in place on a fresh array."""
    x ^= x >> _U64(30)
    x *= _U64(0xBF58476D1CE4E5B9)
    x ^= x >> _U64(27)
    x *= _U64(0x94D049BB133111EB)
    x ^= x >> _U64(31)
    return x


_POWERS: list[np.ndarray] = []


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """P**i and P**-i modulo 2**64 for i < n (at least), cached and grown by doubling."""
    if not _POWERS or len(_POWERS[0]) < n:
        size = max(n, 2 * len(_POWERS[0]) if _POWERS else 1 << 16)
        arrays = []
        for base in (_P, _P_INV):
            a = np.empty(size, dtype=np.uint64)
            a[0] = 1
            a[1:] = base
            np.cumprod(a, out=a)  # uint64 wraps: the product modulo 2**64
            arrays.append(a)
        _POWERS[:] = arrays
    return _POWERS[0], _POWERS[1]


def token_hashes(text: str) -> np.ndarray:
    """64-bit hashes of ``text``'s tokens (``\\w+`` runs and single ``[^\\w\\s]`` characters, as ``_WORD`` finds
    them), in order, computed without building token strings: a polynomial hash of each token's code points
    (prefix sums modulo 2**64) followed by ``_mix64``."""
    if not text:
        return np.zeros(0, dtype=np.uint64)
    cp = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    high = cp >= 128
    if high.any():
        cls = np.empty(len(cp), dtype=np.uint8)
        cls[~high] = _ASCII_CLASS[cp[~high]]
        uniq, inv = np.unique(cp[high], return_inverse=True)
        ucls = np.array([0 if chr(c).isspace() else 1 if chr(c).isalnum() else 2 for c in uniq.tolist()], dtype=np.uint8)
        cls[high] = ucls[inv]
    else:
        cls = _ASCII_CLASS[cp]
    word = cls == 1
    punct = cls == 2
    edge = np.empty(len(cp), dtype=bool)  # a word character whose left neighbour is not one
    edge[0] = word[0]
    np.greater(word[1:], word[:-1], out=edge[1:])
    starts = np.flatnonzero(edge | punct)
    if not len(starts):
        return np.zeros(0, dtype=np.uint64)
    edge[-1] = word[-1]  # reused: a word character whose right neighbour is not one
    np.greater(word[:-1], word[1:], out=edge[:-1])
    ends = np.flatnonzero(edge | punct) + 1
    n = len(cp)
    powers, inv = _powers(n + 1)
    prefix = np.zeros(n + 1, dtype=np.uint64)
    np.cumsum((cp.astype(np.uint64) + _U64(1)) * powers[:n], out=prefix[1:])
    h = (prefix[ends] - prefix[starts]) * inv[starts]  # the token's polynomial, shifted to start at P**0
    h += (ends - starts).astype(np.uint64) * _TOKEN_SEED
    return _mix64(h)


_POSITION = np.array([0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53,
                      0x87C37B91114253D5, 0x4CF5AD432745937F, 0x52DCE729DA3ED2B5], dtype=np.uint64)


def _multipliers(k: int) -> np.ndarray:
    if k <= len(_POSITION):
        return _POSITION[:k]
    extra = _mix64(np.arange(len(_POSITION), k, dtype=np.uint64) + _U64(0x5851F42D4C957F2D)) | _U64(1)
    return np.concatenate([_POSITION, extra])


def shingle_hashes(text: str, shingle_size: int) -> np.ndarray:
    """32-bit hashes of the ``shingle_size``-token windows of ``text`` (one window of all tokens when there are
    fewer, so an empty or short text still has a signature): position-weighted sums of ``token_hashes``, mixed."""
    th = token_hashes(text)
    k = min(shingle_size, len(th))
    mult = _multipliers(max(k, 1))
    n = len(th) - k + 1
    acc = np.full(n, k, dtype=np.uint64)  # the window length, so short texts of different lengths differ
    for j in range(k):
        acc += th[j:j + n] * mult[j]
    return (_mix64(acc) >> _U64(32)).astype(np.uint32)


def _permutations(num_perm: int, seed: int) -> np.ndarray:
    """datasketch's permutation parameters for (num_perm, seed), generated once: MinHash() without them draws them
    afresh from a seeded RandomState, which costs more than the rest of an LSH check."""
    perms = _PERMUTATIONS.get((num_perm, seed))
    if perms is None:
        perms = _PERMUTATIONS.setdefault((num_perm, seed), MinHash(num_perm=num_perm, seed=seed).permutations)
    return perms


def minhash_of(text: str, *, num_perm: int, shingle_size: int, seed: int) -> MinHash:
    """A datasketch ``MinHash`` holding ``minhash_values(text, …)`` (see there)."""
    return MinHash(num_perm=num_perm, seed=seed, hashvalues=minhash_values(text, num_perm=num_perm,
                   shingle_size=shingle_size, seed=seed), permutations=_permutations(num_perm, seed), scheme="affine32")


def minhash_values(text: str, *, num_perm: int, shingle_size: int, seed: int) -> np.ndarray:
    """The hash values of a datasketch ``MinHash(num_perm, seed)`` ("affine32" permutations) over
    ``shingle_hashes(text, shingle_size)`` (computed in one compiled pass, ``kernels.signatures``; a test pins it
    against the numpy definition).

    Not datasketch's ``update`` path (SHA-1 of each shingle's UTF-8 string): shingles are hashed arithmetically
    from token hashes, which is several times cheaper. The estimator is the same (independent hashes, the same
    permutations); only the 32-bit shingle hash function differs, so estimated Jaccards differ from the SHA-1
    variant by sampling noise. A repeated shingle counts once (the minimum ignores repeats)."""
    return _compiled([text], normalise=False, key=False, near_chars=len(text), num_perm=num_perm,
                     shingle_size=shingle_size, seed=seed)[0][1]


_CAPITAL_SIGMA = 0x3A3  # its lower-case form depends on the neighbours (final sigma): not a per-character map
_TABLES: dict[bool, tuple[np.ndarray, np.ndarray]] = {}
_NO_BYTES = np.zeros(0, dtype=np.uint8)
_BUFFER = [_NO_BYTES]
_BUFFER_KEEP = 64 * 2**20


def _class(ch: str) -> int:
    return int(_ASCII_CLASS[ord(ch)]) if ord(ch) < 128 else 0 if ch.isspace() else 1 if ch.isalnum() else 2


def _tables(lower: bool) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's per-code-point tables for one mode: the mapped form (lower case, or the code point itself) and
    that form's token class (0 for whitespace); filled for ASCII now and for other code points when first met."""
    from harnessfit.dataset.kernels import UNKNOWN

    got = _TABLES.get(lower)
    if got is None:
        low = np.arange(0x110000, dtype=np.uint32)
        cls = np.full(0x110000, UNKNOWN, dtype=np.uint8)
        got = _TABLES[lower] = (low, cls)
        _fill(got, np.arange(128, dtype=np.uint32), lower)
    return got


def _fill(tables: tuple[np.ndarray, np.ndarray], cp: np.ndarray, lower: bool) -> None:
    """Enter the code points of ``cp`` that the tables do not hold yet; one whose lower case is several characters
    or depends on context (final sigma) is marked ``OWN_LOWER`` (then the caller lower-cases the string itself)."""
    from harnessfit.dataset.kernels import OWN_LOWER, UNKNOWN

    low, cls = tables
    for c in np.unique(cp[cls[cp] == UNKNOWN]).tolist():
        ch = chr(c)
        lc = ch.lower() if lower else ch
        if len(lc) != 1 or (lower and c == _CAPITAL_SIGMA):
            cls[c] = OWN_LOWER
            continue
        low[c] = ord(lc)
        cls[c] = 0 if ch.isspace() else _class(lc)


def _compiled(texts: list[str], *, normalise: bool, key: bool, near_chars: int, num_perm: int, shingle_size: int,
              seed: int) -> list[tuple[str | None, np.ndarray]]:
    """For each text: (``exact_key`` of its normalised form when ``key``, MinHash values of that form's first
    ``near_chars`` characters), computed in one kernel call for all of them. ``normalise``: the texts are
    ``_joined`` output, collapsed and lower-cased here; otherwise taken as they are (the MinHash of a text does not
    depend on its whitespace)."""
    from harnessfit.dataset import kernels

    if shingle_size < 1:
        raise ValueError("shingle_size must be at least 1")
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    src = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    bounds = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=bounds[1:])
    out = _NO_BYTES
    if key:  # one output buffer, reused: a fresh large one per call costs page faults
        if len(_BUFFER[0]) < 2 * len(src):
            _BUFFER[0] = np.empty(max(2 * len(src), 1 << 20), dtype=np.uint8)
        out = _BUFFER[0]
    tables = _tables(normalise)
    a, b = _permutations(num_perm, seed)
    mult = _multipliers(shingle_size)
    results: list[tuple[str | None, np.ndarray]] = []
    start = 0
    while start < len(texts):
        base = bounds[start]
        status, done, ub, mins = kernels.signatures(src[base:], bounds[start:] - base, *tables, out, near_chars, mult,
                                                   shingle_size, a, b)
        for t in range(done):
            results.append((hashlib.sha256(out[ub[t]:ub[t + 1]]).hexdigest() if key else None, mins[t]))
        start += done
        if status == kernels.UNKNOWN:  # enter the text's new code points, then go on from it
            _fill(tables, np.frombuffer(texts[start].encode("utf-32-le", "surrogatepass"), dtype="<u4"), normalise)
        elif status == kernels.OWN_LOWER:  # lower-case this one as a whole string, then take it as it is
            results += _compiled([" ".join(texts[start].split()).lower()], normalise=False, key=key,
                                 near_chars=near_chars, num_perm=num_perm, shingle_size=shingle_size, seed=seed)
            start += 1
    if len(_BUFFER[0]) > _BUFFER_KEEP:  # a batch with a very large conversation: do not hold its buffer on
        _BUFFER[0] = _NO_BYTES
    return results


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
        self._hashes: dict[str, np.ndarray] = {}  # MinHash values of the kept conversations

    def signature(self, conv: Conversation) -> tuple[str, Any]:
        """Hashes of one conversation (pure, so workers can compute them in parallel): ``exact_key`` of its
        ``normalised_text`` and the MinHash values of that text's first ``NEAR_CHARS`` characters (near-duplicates
        are judged on those; the exact key covers everything: keeps MinHash cost bounded per conversation)."""
        return self.signatures([conv])[0]

    def signatures(self, convs: list[Conversation]) -> list[tuple[str, Any]]:
        """``signature`` of each of ``convs``, in one compiled call."""
        found = _compiled([_joined(c) for c in convs], normalise=True, key=True,
                          near_chars=NEAR_CHARS if self.near else 0, num_perm=self.num_perm,
                          shingle_size=self.shingle_size, seed=self.seed)
        return [(key, (hv, "affine32") if self.near else None) for key, hv in found]  # type: ignore[misc]

    def check(self, conv: Conversation, signature: tuple[str, Any] | None = None) -> Rejection | None:
        """Record ``conv`` as kept (None) or return the ledger row of a dropped twin."""
        return self.check_signed(conv.id, conv.meta, signature if signature is not None else self.signature(conv))

    def check_signed(self, conv_id: str, meta: ConversationMeta, signature: tuple[str, Any]) -> Rejection | None:
        """Same as ``check`` with precomputed hashes (from a worker)."""
        key, hv = signature
        if self.exact and key in self._seen:
            return _dup(conv_id, meta, Reason.duplicate_exact, self._seen[key], "identical to an earlier conversation after normalisation")
        if self._lsh is not None:
            mh = _Sketch(hv[0], hv[1])
            candidates = sorted(self._lsh.query(mh))
            best = None
            for cid in candidates:  # LSH candidates are few; confirm with the estimated Jaccard and keep the closest
                # MinHash.jaccard's estimate: the share of equal hash values
                j = float(np.count_nonzero(mh.hashvalues == self._hashes[cid])) / float(self.num_perm)
                if j >= self.threshold and (best is None or j > best[0]):
                    best = (j, cid)
            if best is not None:
                return _dup(conv_id, meta, Reason.duplicate_near, best[1], f"near-duplicate (estimated Jaccard {best[0]:.2f})")
            self._lsh.insert(conv_id, mh)
            self._hashes[conv_id] = mh.hashvalues
        self._seen.setdefault(key, conv_id)
        return None


class _Sketch:
    """What ``MinHashLSH.query``/``insert`` read of a MinHash (its values, their count and its permutation scheme),
    without building a datasketch ``MinHash`` (which validates and copies its permutations) for every check."""

    __slots__ = ("hashvalues", "scheme")

    def __init__(self, hashvalues: np.ndarray, scheme: str) -> None:
        self.hashvalues = hashvalues
        self.scheme = scheme

    def __len__(self) -> int:
        return len(self.hashvalues)


def _dup(conv_id: str, meta: ConversationMeta, reason: Reason, kept: str, detail: str) -> Rejection:
    return Rejection(
        record_id=conv_id, source=meta.source, file=meta.file, line_start=meta.line_start, line_end=meta.line_end, reason=reason, detail=detail,
        repair_hint="nothing to repair: the kept twin carries the same work", kept_id=kept,
    )
