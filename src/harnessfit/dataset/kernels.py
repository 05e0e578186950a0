"""Compiled loops (numba) for the build's per-character work: dedup's normalisation, exact-key text and MinHash
(many conversations per call), and redaction's scans over a conversation's UTF-8 (high-entropy candidate runs,
byte-to-character offsets, the Telegram/Discord corpus guards).

Each kernel computes exactly what a plain definition elsewhere computes (``dedup.normalised_text`` /
``dedup.token_hashes`` / ``dedup.shingle_hashes``, the runs ``redact._TOKEN`` can match in, the corpus guard
patterns); tests pin the results against those definitions. They exist only for speed: one pass over the bytes
instead of a dozen numpy passes and temporaries or a regex attempt at every position.

Compiled once per install (``make setup`` runs ``warm``; otherwise on first use) and cached on disk beside this
file (``cache=True``); a process then pays numba's import and the cache load (~0.5 CPU s). This module is imported
lazily (by the first signature or scan), so commands that never build a dataset do not load numba at all.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["signatures", "warm"]

_U = np.uint64
_P = _U(0x100000001B3)
_SEED = _U(0x9E3779B97F4A7C15)
_MASK32 = _U(0xFFFFFFFF)


@njit(cache=True, nogil=True, inline="always")
def _mix64(x):  # splitmix64's finaliser, as dedup._mix64
    x ^= x >> _U(30)
    x *= _U(0xBF58476D1CE4E5B9)
    x ^= x >> _U(27)
    x *= _U(0x94D049BB133111EB)
    x ^= x >> _U(31)
    return x


UNKNOWN = 255  # a code point whose class the caller's table does not hold yet
OWN_LOWER = 254  # a code point whose lower case is several characters or depends on its neighbours


@njit(cache=True, nogil=True, inline="always")
def _shingle(ring, w, mult):
    """The hash of the window of the last ``w`` token hashes (the right end of ``ring``): a position-weighted sum,
    mixed, its high 32 bits."""
    acc = _U(w)
    base = len(ring) - w
    for j in range(w):
        acc += ring[base + j] * mult[j]
    return np.uint32(_mix64(acc) >> _U(32))


@njit(cache=True, nogil=True)
def _permute(sh, count, a, b, mins):
    """Fold the shingle hashes ``sh[:count]`` into the MinHash ``mins`` with datasketch's affine32 permutations
    (a*h + b mod 2**32), one permutation at a time over all shingles (a loop the compiler vectorises)."""
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
    """Signatures of several texts in one call (a call from Python has a fixed cost). ``src`` holds them as UTF-8
    (bytes as ``surrogatepass`` writes them), text ``t`` at ``src[bounds[t]:bounds[t + 1]]``. For each: normalise
    its code points (map each through ``low``; drop leading and trailing whitespace; one space for each whitespace
    run), write the result as UTF-8 into ``utf8`` (at least twice as long as ``src``: a lower-case form is at most
    1.5 times as long; an empty ``utf8`` skips this), and fold the shingles of its first ``near_chars`` normalised
    code points into MinHash values.

    Returns (status, texts done, UTF-8 bounds (text ``t`` at ``utf8[ub[t]:ub[t + 1]]``), MinHash values (one row
    per text)); status 0 = all done, ``UNKNOWN`` / ``OWN_LOWER`` = stopped at such a code point in the first text
    not done (see the caller).

    ``cls`` is the token class of each code point's mapped form (0 whitespace, 1 word, 2 punctuation). Tokens are
    word runs and single punctuation characters; token hashes, shingles (``shingle_size`` >= 1 tokens, or one
    window of all tokens when there are fewer) and permutations are ``dedup``'s definitions."""
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
    what it wrote)."""
    want_utf8 = len(utf8) > 0
    k = len(ring)
    nt = 0  # tokens so far
    ns = 0  # shingles so far
    m = 0  # normalised code points so far
    space = False
    word = False  # inside a word token
    h = _U(0)
    pw = _U(1)
    wlen = 0
    while i < n:  # decode one code point (the input is valid UTF-8 with surrogates passed)
        b0 = src[i]
        if b0 < 0x80:
            c = np.uint32(b0)
            i += 1
        elif b0 < 0xE0:
            c = (np.uint32(b0 & 0x1F) << 6) | np.uint32(src[i + 1] & 0x3F)
            i += 2
        elif b0 < 0xF0:
            c = (np.uint32(b0 & 0x0F) << 12) | (np.uint32(src[i + 1] & 0x3F) << 6) | np.uint32(src[i + 2] & 0x3F)
            i += 3
        else:
            c = ((np.uint32(b0 & 0x07) << 18) | (np.uint32(src[i + 1] & 0x3F) << 12)
                 | (np.uint32(src[i + 2] & 0x3F) << 6) | np.uint32(src[i + 3] & 0x3F))
            i += 4
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
            if lc < 0x80:
                utf8[u] = lc
                u += 1
            elif lc < 0x800:
                utf8[u] = 0xC0 | (lc >> 6)
                utf8[u + 1] = 0x80 | (lc & 0x3F)
                u += 2
            elif lc < 0x10000:
                utf8[u] = 0xE0 | (lc >> 12)
                utf8[u + 1] = 0x80 | ((lc >> 6) & 0x3F)
                utf8[u + 2] = 0x80 | (lc & 0x3F)
                u += 3
            else:
                utf8[u] = 0xF0 | (lc >> 18)
                utf8[u + 1] = 0x80 | ((lc >> 12) & 0x3F)
                utf8[u + 2] = 0x80 | ((lc >> 6) & 0x3F)
                utf8[u + 3] = 0x80 | (lc & 0x3F)
                u += 4
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
        for j in range(k - 1):
            ring[j] = ring[j + 1]
        ring[k - 1] = _mix64(h + _U(wlen) * _SEED)
        nt += 1
        if nt >= k:
            sh[ns] = _shingle(ring, k, mult)
            ns += 1
    if nt < k:  # fewer tokens than a shingle: one window of them all
        sh[ns] = _shingle(ring, nt, mult)
        ns += 1
    _permute(sh, ns, a, b, mins)
    return 0, u


def warm() -> None:
    """Compile (or load from the disk cache) every kernel with the argument types the build uses (inputs that come
    from ``np.frombuffer`` are read-only arrays, a type of their own)."""
    text = np.frombuffer(b"a b", dtype=np.uint8)  # read-only, as the callers' UTF-8 views are
    table = np.zeros(128, dtype=np.uint32)
    signatures(text, np.array([0, 3], dtype=np.int64), table, np.zeros(128, dtype=np.uint8),
               np.zeros(8, dtype=np.uint8), 10, np.ones(1, dtype=np.uint64), 1, np.ones(1, dtype=np.uint32),
               np.ones(1, dtype=np.uint32))
    from harnessfit.dataset.redact import kernels as redaction_kernels

    redaction_kernels.warm()
