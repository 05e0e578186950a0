"""Compiled loops (numba) for redaction's scans over a conversation's UTF-8: the runs a high-entropy secret can sit
in, byte-to-character offsets, and the Telegram/Discord corpus guards. Each computes what a plain definition
computes (``rules.entropy``'s candidate runs, the guards' patterns); tests pin them. Compiled once per install
and cached beside this file; imported only by the first scan that needs one.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["entropy_runs", "char_offsets", "dot_colon_guards", "warm"]


@njit(cache=True, nogil=True)
def entropy_runs(cp, run128, min_len, min_switches):
    """Starts of the maximal runs of ``run128`` characters (ASCII only) at least ``min_len`` long that hold at
    least two upper-case letters, two lower-case letters and two digits and switch character class (lower, upper,
    digit, other) at least ``min_switches`` times: necessary conditions of a high-entropy secret inside the run."""
    n = len(cp)
    out = np.empty(n // max(min_len, 1) + 1, dtype=np.int64)
    count = 0
    run = 0  # length of the run of run characters ending here
    i = 0
    while i < n:
        c = cp[i]
        # branch-free in the common case: most runs are words, far shorter than min_len
        run = (run + 1) * (c < 128 and run128[c])
        i += 1
        if run < min_len:
            continue
        start = i - run
        while i < n and cp[i] < 128 and run128[cp[i]]:  # the rest of this long run
            i += 1
        run = 0
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


@njit(cache=True, nogil=True)
def _token_byte(c):  # [0-9A-Za-z_-]
    return (48 <= c <= 57) or (65 <= c <= 90) or (97 <= c <= 122) or c == 95 or c == 45


@njit(cache=True, nogil=True)
def dot_colon_guards(utf8):
    r"""Over UTF-8 bytes: (is there a ``:`` followed by 35 of ``[0-9A-Za-z_-]``, is there a ``.``, a run of 6 to 24
    bytes that may be word characters, a ``.`` and a run of 27 or more such bytes). The first is exactly
    ``:[0-9A-Za-z_-]{35}``; the second holds wherever ``\.[\w-]{6}\.[\w-]{27}`` matches (a non-ASCII byte counts
    as maybe a word character; 6 characters are 6 to 24 bytes), so a False rules that pattern out."""
    n = len(utf8)
    colon = False
    dot = False
    for i in range(n):
        c = utf8[i]
        if c == 58 and not colon:
            j = i + 1
            while j < n and j - i <= 35 and _token_byte(utf8[j]):
                j += 1
            colon = j - i > 35
        elif c == 46 and not dot:
            j = i + 1
            while j < n and (utf8[j] >= 128 or _token_byte(utf8[j])):
                j += 1
            if 6 <= j - i - 1 <= 24 and j < n and utf8[j] == 46:
                k = j + 1
                while k < n and k - j <= 27 and (utf8[k] >= 128 or _token_byte(utf8[k])):
                    k += 1
                dot = k - j > 27
        if colon and dot:
            break
    return colon, dot


@njit(cache=True, nogil=True)
def char_offsets(utf8, offsets):
    """The character offsets of the ascending byte ``offsets`` into the UTF-8 text ``utf8`` (each at a character
    start): the number of characters (bytes that are not continuation bytes) before each."""
    out = np.empty(len(offsets), dtype=np.int64)
    j = 0
    chars = 0
    for i in range(len(utf8)):
        while j < len(offsets) and offsets[j] == i:
            out[j] = chars
            j += 1
        if j == len(offsets):
            break
        if (utf8[i] & 0xC0) != 0x80:
            chars += 1
    while j < len(offsets):
        out[j] = chars
        j += 1
    return out


def warm() -> None:
    """Compile (or load from the disk cache) every kernel with the argument types the build uses (inputs that come
    from ``np.frombuffer`` are read-only arrays, a type of their own)."""
    text = np.frombuffer(b"a b", dtype=np.uint8)
    entropy_runs(text, np.zeros(128, dtype=np.bool_), 24, 9)
    char_offsets(text, np.zeros(1, dtype=np.int64))
    dot_colon_guards(text)
