"""The ``numba`` backend: ``definition``'s normalisation, exact-key text, tokens, shingles and MinHash in one
compiled pass over each text's UTF-8, many texts per call (a call from Python has a fixed cost). A test pins it
against the definition (``minhash_values(..., backend="numpy")``, ``Deduper(backend="numpy")``).

Compiled once per install (``make setup`` runs ``dataset.kernels.warm``; otherwise on first use) and cached on disk
beside this file; a process then pays numba's import and the cache load (~0.5 CPU s). Imported by the first
signature, so commands that never build a dataset do not load numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["signatures", "warm", "UNKNOWN", "OWN_LOWER"]

_U = np.uint64
_P = _U(0x100000001B3)
_SEED = _U(0x9E3779B97F4A7C15)  # definition._SEED_INT
UNKNOWN = 255  # a code point whose class the caller's table does not hold yet
OWN_LOWER = 254  # a code point whose lower case is several characters or depends on its neighbours


@njit(cache=True, nogil=True, inline="always")
def _mix64(x):  # definition.mix64
    x ^= x >> _U(30)
    x *= _U(0xBF58476D1CE4E5B9)
    x ^= x >> _U(27)
    x *= _U(0x94D049BB133111EB)
    x ^= x >> _U(31)
    return x


@njit(cache=True, nogil=True, inline="always")
def _decode(src, i):
    """The code point at ``src[i]`` (valid UTF-8, surrogates passed) and where the next one starts."""
    b0 = src[i]
    if b0 < 0x80:
        return np.uint32(b0), i + 1
    if b0 < 0xE0:
        return (np.uint32(b0 & 0x1F) << 6) | np.uint32(src[i + 1] & 0x3F), i + 2
    if b0 < 0xF0:
        return (
            (np.uint32(b0 & 0x0F) << 12) | (np.uint32(src[i + 1] & 0x3F) << 6) | np.uint32(src[i + 2] & 0x3F)
        ), i + 3
    return (
        (np.uint32(b0 & 0x07) << 18)
        | (np.uint32(src[i + 1] & 0x3F) << 12)
        | (np.uint32(src[i + 2] & 0x3F) << 6)
        | np.uint32(src[i + 3] & 0x3F)
    ), i + 4


@njit(cache=True, nogil=True, inline="always")
def _encode(utf8, u, c):
    """Write code point ``c`` as UTF-8 at ``utf8[u]``; where the next one goes."""
    if c < 0x80:
        utf8[u] = c
        return u + 1
    if c < 0x800:
        utf8[u] = 0xC0 | (c >> 6)
        utf8[u + 1] = 0x80 | (c & 0x3F)
        return u + 2
    if c < 0x10000:
        utf8[u] = 0xE0 | (c >> 12)
        utf8[u + 1] = 0x80 | ((c >> 6) & 0x3F)
        utf8[u + 2] = 0x80 | (c & 0x3F)
        return u + 3
    utf8[u] = 0xF0 | (c >> 18)
    utf8[u + 1] = 0x80 | ((c >> 12) & 0x3F)
    utf8[u + 2] = 0x80 | ((c >> 6) & 0x3F)
    utf8[u + 3] = 0x80 | (c & 0x3F)
    return u + 4


@njit(cache=True, nogil=True, inline="always")
def _shingle(ring, w, mult):
    """The hash of the window of the last ``w`` token hashes (the right end of ``ring``)."""
    acc = _U(w)
    base = len(ring) - w
    for j in range(w):
        acc += ring[base + j] * mult[j]
    return np.uint32(_mix64(acc) >> _U(32))


@njit(cache=True, nogil=True, inline="always")
def _push(ring, token, nt, sh, ns, mult):
    """Shift one token hash into ``ring`` (the last k); once k are in, collect each full window's hash in ``sh``.
    Returns the token and shingle counts."""
    k = len(ring)
    for j in range(k - 1):
        ring[j] = ring[j + 1]
    ring[k - 1] = token
    nt += 1
    if nt >= k:
        sh[ns] = _shingle(ring, k, mult)
        ns += 1
    return nt, ns


@njit(cache=True, nogil=True)
def _permute(sh, count, a, b, mins):
    """Fold the shingle hashes ``sh[:count]`` into the MinHash ``mins`` (a*h + b mod 2**32), one permutation at a
    time over all shingles (a loop the compiler vectorises)."""
    for p in range(len(a)):
        ap = a[p]
        bp = b[p]
        best = mins[p]
        for s in range(count):
            v = np.uint32(ap * sh[s] + bp)
            if v < best:
                best = v
        mins[p] = best


@njit(cache=True, nogil=True)
def signatures(src, bounds, low, cls, utf8, near_chars, mult, shingle_size, a, b):
    """Signatures of several texts in one call. ``src`` holds them as UTF-8, text ``t`` at
    ``src[bounds[t]:bounds[t + 1]]``. For each: map its code points through ``low`` (lower case, or themselves),
    drop leading and trailing whitespace and write one space per whitespace run (``cls`` 0), write the result as
    UTF-8 into ``utf8`` (at least twice as long as ``src``: a lower-case form is at most 1.5 times as long; an
    empty ``utf8`` skips this), and fold the shingles of its first ``near_chars`` normalised code points into
    MinHash values. ``cls``: the token class of each mapped code point (0 space, 1 word, 2 other).

    Returns (status, texts done, UTF-8 bounds (text ``t`` at ``utf8[ub[t]:ub[t + 1]]``), MinHash values, one row
    per text); status 0 = all done, ``UNKNOWN`` / ``OWN_LOWER`` = stopped at such a code point in the first text
    not done (the caller fills its tables, or lower-cases that text itself, and calls again)."""
    texts = len(bounds) - 1
    mins = np.full((texts, len(a)), np.uint32(0xFFFFFFFF), dtype=np.uint32)
    ub = np.zeros(texts + 1, dtype=np.int64)
    ring = np.zeros(shingle_size, dtype=np.uint64)
    longest = 0
    for t in range(texts):
        longest = max(longest, bounds[t + 1] - bounds[t])
    sh = np.empty(longest + 1, dtype=np.uint32)  # a text's shingle hashes (no more than its bytes, or one)
    u = 0
    for t in range(texts):
        status, u = _one(src, bounds[t], bounds[t + 1], low, cls, utf8, u, near_chars, mult, ring, sh, a, b, mins[t])
        if status != 0:
            return status, t, ub, mins
        ub[t + 1] = u
    return 0, texts, ub, mins


@njit(cache=True, nogil=True)
def _one(src, i, n, low, cls, utf8, u, near_chars, mult, ring, sh, a, b, mins):
    """One text of ``signatures``: ``src[i:n]``, its UTF-8 written from ``utf8[u]`` on; returns (status, end of
    what it wrote). A word token's hash accumulates as its characters arrive."""
    want_utf8 = len(utf8) > 0
    k = len(ring)
    nt = ns = m = 0  # tokens, shingles, normalised code points so far
    space = word = False  # a space is pending; inside a word token
    h = _U(0)
    pw = _U(1)
    wlen = 0
    while i < n:
        c, i = _decode(src, i)
        kc = cls[c]
        if kc >= OWN_LOWER:
            return kc, u
        if kc == 0:
            space = m > 0
            continue
        # at most two tokens end here: a word (at a space, a punctuation mark or the near_chars cut) and a
        # punctuation mark; they are shifted into ring (the last k token hashes) and each full window's hash is
        # collected in sh (permuted once the text is done)
        ended = 0
        t1 = t2 = _U(0)
        if space:
            space = False
            if want_utf8:
                utf8[u] = 32
                u += 1
            m += 1
            if word:
                word = False
                t1 = _mix64(h + _U(wlen) * _SEED)
                ended = 1
        lc = low[c]
        if want_utf8:
            u = _encode(utf8, u, lc)
        if m < near_chars:
            if kc == 1:
                if word:
                    h += (_U(lc) + _U(1)) * pw
                    pw *= _P
                    wlen += 1
                else:
                    word = True
                    h = _U(lc) + _U(1)
                    pw = _P
                    wlen = 1
            else:
                if word:  # still open, so no space came before: this is the first token to end here
                    word = False
                    t1 = _mix64(h + _U(wlen) * _SEED)
                    ended = 1
                tp = _mix64(_U(lc) + _U(1) + _SEED)
                if ended == 0:
                    t1 = tp
                else:
                    t2 = tp
                ended += 1
        elif word:  # the cut at near_chars ends the word
            word = False
            t1 = _mix64(h + _U(wlen) * _SEED)
            ended = 1
        m += 1
        for e in range(ended):
            for j in range(k - 1):
                ring[j] = ring[j + 1]
            ring[k - 1] = t1 if e == 0 else t2
            nt += 1
            if nt >= k:
                sh[ns] = _shingle(ring, k, mult)
                ns += 1
    if word:
        nt, ns = _push(ring, _mix64(h + _U(wlen) * _SEED), nt, sh, ns, mult)
    if nt < k:  # fewer tokens than a shingle: one window of them all
        sh[ns] = _shingle(ring, nt, mult)
        ns += 1
    _permute(sh, ns, a, b, mins)
    return 0, u


def warm() -> None:
    """Compile (or load from the disk cache) the kernel with the argument types the build uses (inputs that come
    from ``np.frombuffer`` are read-only arrays, a type of their own)."""
    text = np.frombuffer(b"a b", dtype=np.uint8)  # read-only, as the callers' UTF-8 views are
    table = np.zeros(128, dtype=np.uint32)
    signatures(
        text,
        np.array([0, 3], dtype=np.int64),
        table,
        np.zeros(128, dtype=np.uint8),
        np.zeros(8, dtype=np.uint8),
        10,
        np.ones(1, dtype=np.uint64),
        1,
        np.ones(1, dtype=np.uint32),
        np.ones(1, dtype=np.uint32),
    )
