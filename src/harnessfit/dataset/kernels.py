"""Compiled loops (numba) for the build's per-character work: dedup's normalisation + MinHash, and redaction's
high-entropy candidate scan.

Each kernel computes exactly what a plain definition elsewhere computes (``dedup.normalised_text`` /
``dedup.token_hashes`` / ``dedup.shingle_hashes``, ``redact._TOKEN``'s candidate runs); tests pin them against
those definitions. They exist only for speed: one pass over a conversation's code points instead of a dozen numpy
passes and temporaries.

Compiled on first use and cached on disk beside this file (``cache=True``), so a process pays the compile once per
install and then only numba's import. This module is imported lazily (by the first signature or scan), so commands
that never build a dataset do not load numba at all.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["signature", "entropy_runs", "warm"]

_U = np.uint64
_P = _U(0x100000001B3)
_SEED = _U(0x9E3779B97F4A7C15)
_MASK32 = _U(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _mix64(x):  # splitmix64's finaliser, as dedup._mix64
    x ^= x >> _U(30)
    x *= _U(0xBF58476D1CE4E5B9)
    x ^= x >> _U(27)
    x *= _U(0x94D049BB133111EB)
    x ^= x >> _U(31)
    return x


@njit(cache=True, nogil=True)
def _lookup(keys, c):
    """Index of ``c`` in the sorted ``keys`` (it is there: the caller built ``keys`` from the text)."""
    lo, hi = 0, len(keys) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] < c:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def signature(cp, low128, cls128, hi_keys, hi_low, hi_cls, want_utf8, near_chars, mult, shingle_size, a, b):
    """Normalise the code points ``cp`` (map each through the lower-case tables, drop leading/trailing whitespace,
    collapse each whitespace run to one space), then return (the normalised text as UTF-8 (lone surrogates as
    ``surrogatepass`` writes them; empty unless ``want_utf8``), MinHash values over the shingles of its first
    ``near_chars`` code points).

    Tables: ``low128``/``cls128`` map an ASCII code point to its lower-case form and that form's class (0 space,
    1 word, 2 punctuation); ``hi_keys`` (sorted) / ``hi_low`` / ``hi_cls`` do the same for the text's non-ASCII
    code points. Tokens, token hashes, shingles and permutations are ``dedup``'s definitions."""
    n = len(cp)
    norm = np.empty(n, dtype=np.uint32)
    ncls = np.empty(n, dtype=np.uint8)
    m = 0
    space = False
    for i in range(n):
        c = cp[i]
        if c < 128:
            kc = cls128[c]
            lc = low128[c]
        else:
            j = _lookup(hi_keys, c)
            kc = hi_cls[j]
            lc = hi_low[j]
        if kc == 0:
            space = m > 0
            continue
        if space:
            norm[m] = 32
            ncls[m] = 0
            m += 1
            space = False
        norm[m] = lc
        ncls[m] = kc
        m += 1

    utf8 = np.empty(4 * m if want_utf8 else 0, dtype=np.uint8)
    u = 0
    if want_utf8:
        for i in range(m):
            c = norm[i]
            if c < 0x80:
                utf8[u] = c
                u += 1
            elif c < 0x800:
                utf8[u] = 0xC0 | (c >> 6)
                utf8[u + 1] = 0x80 | (c & 0x3F)
                u += 2
            elif c < 0x10000:
                utf8[u] = 0xE0 | (c >> 12)
                utf8[u + 1] = 0x80 | ((c >> 6) & 0x3F)
                utf8[u + 2] = 0x80 | (c & 0x3F)
                u += 3
            else:
                utf8[u] = 0xF0 | (c >> 18)
                utf8[u + 1] = 0x80 | ((c >> 12) & 0x3F)
                utf8[u + 2] = 0x80 | ((c >> 6) & 0x3F)
                utf8[u + 3] = 0x80 | (c & 0x3F)
                u += 4

    # tokens of the first near_chars code points: word runs and single punctuation characters
    end = min(m, near_chars)
    th = np.empty(end, dtype=np.uint64)
    nt = 0
    i = 0
    while i < end:
        kt = ncls[i]
        if kt == 0:
            i += 1
        elif kt == 2:
            th[nt] = _mix64(_U(norm[i]) + _U(1) + _SEED)
            nt += 1
            i += 1
        else:
            h = _U(0)
            pw = _U(1)
            j = i
            while j < end and ncls[j] == 1:
                h += (_U(norm[j]) + _U(1)) * pw
                pw *= _P
                j += 1
            th[nt] = _mix64(h + _U(j - i) * _SEED)
            nt += 1
            i = j

    # shingles: one window of all tokens when there are fewer than shingle_size (one window of none when empty)
    k = min(shingle_size, nt)
    perms = len(a)
    mins = np.full(perms, np.uint32(0xFFFFFFFF), dtype=np.uint32)
    for s in range(nt - k + 1):
        acc = _U(k)
        for j in range(k):
            acc += th[s + j] * mult[j]
        h = _U(_mix64(acc) >> _U(32))
        for p in range(perms):  # datasketch's affine32 permutation: (a * h + b) mod 2**32
            v = np.uint32((_U(a[p]) * h + _U(b[p])) & _MASK32)
            if v < mins[p]:
                mins[p] = v
    return utf8[:u], mins


@njit(cache=True, nogil=True)
def entropy_runs(cp, run128, min_len, min_switches):
    """Starts of the maximal runs of ``run128`` characters (ASCII only) at least ``min_len`` long that hold at
    least two upper-case letters, two lower-case letters and two digits and switch character class (lower, upper,
    digit, other) at least ``min_switches`` times: necessary conditions of a high-entropy secret inside the run."""
    n = len(cp)
    out = np.empty(n // max(min_len, 1) + 1, dtype=np.int64)
    count = 0
    i = 0
    while i < n:
        if cp[i] >= 128 or not run128[cp[i]]:
            i += 1
            continue
        start = i
        while i < n and cp[i] < 128 and run128[cp[i]]:
            i += 1
        if i - start < min_len:  # most runs are words: counted only when long enough
            continue
        up = lo = dg = sw = 0
        prev = -1
        for j in range(start, i):
            c = cp[j]
            if 97 <= c <= 122:
                k = 0
                lo += 1
            elif 65 <= c <= 90:
                k = 1
                up += 1
            elif 48 <= c <= 57:
                k = 2
                dg += 1
            else:
                k = 3
            if prev >= 0 and k != prev:
                sw += 1
            prev = k
        if up >= 2 and lo >= 2 and dg >= 2 and sw >= min_switches:
            out[count] = start
            count += 1
    return out[:count]


def warm() -> None:
    """Compile (or load from the disk cache) every kernel with the argument types the build uses."""
    e8, e32 = np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.uint32)
    t128 = np.zeros(128, dtype=np.uint32)
    c128 = np.zeros(128, dtype=np.uint8)
    signature(np.zeros(1, dtype=np.uint32), t128, c128, e32, e32, e8, True, 10, np.ones(1, dtype=np.uint64), 1,
              np.ones(1, dtype=np.uint32), np.ones(1, dtype=np.uint32))
    entropy_runs(np.zeros(1, dtype=np.uint32), np.zeros(128, dtype=np.bool_), 24, 9)
    entropy_runs(np.zeros(1, dtype=np.uint8), np.zeros(128, dtype=np.bool_), 24, 9)
