"""What two conversations being duplicates means — the definition, in plain numpy (the ``numpy`` backend).

1. **normalise** — the conversation's content without the system prompt and tool schemas (the same for every
   conversation of one harness) and without call ids (they differ between two runs of the same work): role, text,
   tool name and arguments, whitespace collapsed, lower-cased (``normalised_text``);
2. **exact key** — the SHA-256 of that text (``exact_key``): equal keys are exact duplicates;
3. **tokens** — ``\\w+`` runs and single other non-space characters (``_WORD``), each hashed to 64 bits: a
   polynomial of its code points modulo 2**64, plus its length times a seed, through splitmix64's finaliser
   (``token_hashes``);
4. **shingles** — every window of ``shingle_size`` consecutive tokens (one window of all tokens when there are
   fewer), hashed to 32 bits: a position-weighted sum of its token hashes plus its length, mixed (``shingle_hashes``);
5. **MinHash** — for each of datasketch's "affine32" permutations (a, b): the minimum over the distinct shingle
   hashes of (a*h + b) mod 2**32 (``minhash_values``), over the first ``NEAR_CHARS`` characters of the text.
   Two texts are near duplicates when the share of equal values (the estimated Jaccard similarity of their
   shingle sets) reaches the threshold.

Not datasketch's ``update`` path (SHA-1 of each shingle's UTF-8): arithmetic shingle hashes are several times
cheaper; the estimator is the same (independent hashes, the same permutations), so estimated Jaccards differ from
the SHA-1 variant by sampling noise only (a test checks the verdicts on the real traces agree).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np
import orjson
from datasketch import MinHash

__all__ = [
    "NEAR_CHARS",
    "joined_text",
    "normalised_text",
    "exact_key",
    "mix64",
    "token_hashes",
    "shingle_hashes",
    "permutations",
    "multipliers",
    "minhash_values",
]

NEAR_CHARS = 200_000  # near-duplicates are judged on this many normalised characters (bounds the cost per conversation)
_WORD = re.compile(r"\w+|[^\w\s]")
_U64 = np.uint64
_P_INT = 0x100000001B3  # odd: a polynomial base invertible modulo 2**64
_SEED_INT = 0x9E3779B97F4A7C15
_M64 = 2**64
_POSITION = np.array(
    [
        0xC2B2AE3D27D4EB4F,
        0x165667B19E3779F9,
        0xD6E8FEB86659FD93,
        0xFF51AFD7ED558CCD,
        0xC4CEB9FE1A85EC53,
        0x87C37B91114253D5,
        0x4CF5AD432745937F,
        0x52DCE729DA3ED2B5,
    ],
    dtype=np.uint64,
)
_PERMUTATIONS: dict[tuple[int, int], np.ndarray] = {}


def joined_text(conv: Any) -> str:
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


def normalised_text(conv: Any) -> str:
    """Step 1: role + text + tool name + arguments, whitespace collapsed (``str.split`` splits on exactly what
    ``\\s`` matches), lower-cased."""
    return " ".join(joined_text(conv).split()).lower()


def exact_key(text: str) -> str:
    """Step 2: the SHA-256 of the normalised text's UTF-8 (surrogates passed)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (a bijection on uint64 with full avalanche), in place on a fresh array."""
    x ^= x >> _U64(30)
    x *= _U64(0xBF58476D1CE4E5B9)
    x ^= x >> _U64(27)
    x *= _U64(0x94D049BB133111EB)
    x ^= x >> _U64(31)
    return x


def _polynomial(word: str) -> int:
    """The sum of (code point + 1) * P**i over its characters, plus its length times a seed, modulo 2**64."""
    h = 0
    for i, ch in enumerate(word):
        h = (h + (ord(ch) + 1) * pow(_P_INT, i, _M64)) % _M64
    return (h + len(word) * _SEED_INT) % _M64


def token_hashes(text: str) -> np.ndarray:
    """Step 3: one 64-bit hash per token of ``text``, in order."""
    return mix64(np.array([_polynomial(w) for w in _WORD.findall(text)], dtype=np.uint64))


def multipliers(k: int) -> np.ndarray:
    """The position weights of a k-token window: fixed odd constants, more drawn from splitmix64 past eight."""
    if k <= len(_POSITION):
        return _POSITION[:k]
    extra = mix64(np.arange(len(_POSITION), k, dtype=np.uint64) + _U64(0x5851F42D4C957F2D)) | _U64(1)
    return np.concatenate([_POSITION, extra])


def shingle_hashes(text: str, shingle_size: int) -> np.ndarray:
    """Step 4: one 32-bit hash per window of ``shingle_size`` tokens (one window of all tokens when there are
    fewer, so an empty or short text still has a signature)."""
    th = token_hashes(text)
    k = min(shingle_size, len(th))
    mult = multipliers(max(k, 1))
    n = len(th) - k + 1
    acc = np.full(n, k, dtype=np.uint64)  # the window length, so short texts of different lengths differ
    for j in range(k):
        acc += th[j : j + n] * mult[j]
    return (mix64(acc) >> _U64(32)).astype(np.uint32)


def permutations(num_perm: int, seed: int) -> np.ndarray:
    """datasketch's "affine32" permutation parameters (a, b) for (num_perm, seed), drawn once (a ``MinHash``
    draws them afresh from a seeded generator every time it is built)."""
    perms = _PERMUTATIONS.get((num_perm, seed))
    if perms is None:
        perms = _PERMUTATIONS.setdefault((num_perm, seed), MinHash(num_perm=num_perm, seed=seed).permutations)
    return perms


def minhash_values(text: str, *, num_perm: int, shingle_size: int, seed: int) -> np.ndarray:
    """Step 5: the MinHash of ``text``'s shingles (a repeated shingle counts once: the minimum ignores repeats)."""
    if shingle_size < 1:
        raise ValueError("shingle_size must be at least 1")
    a, b = (x.astype(np.uint64) for x in permutations(num_perm, seed))
    h = np.unique(shingle_hashes(text, shingle_size)).astype(np.uint64)
    out = np.full(num_perm, 0xFFFFFFFF, dtype=np.uint64)
    for start in range(0, len(h), 4096):  # bounded temporaries for long texts
        part = h[start : start + 4096]
        np.minimum(out, ((a[:, None] * part[None, :] + b[:, None]) & _U64(0xFFFFFFFF)).min(axis=1), out=out)
    return out.astype(np.uint32)
