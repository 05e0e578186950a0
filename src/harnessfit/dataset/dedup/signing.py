"""Signatures — (exact key, MinHash values) of texts — by either backend: ``numpy`` (``definition``, the plain
statement) or ``numba`` (``kernel``: one compiled pass, many texts per call; the build's). Same values, pinned
by a test through ``minhash_values`` and ``Deduper(backend=...)``."""

from __future__ import annotations

import hashlib

import numpy as np

from harnessfit.dataset.dedup import definition as D

__all__ = ["BACKENDS", "sign", "minhash_values"]

BACKENDS = ("numba", "numpy")
_CAPITAL_SIGMA = 0x3A3  # its lower-case form depends on the neighbours (final sigma): not a per-character map
_TABLES: dict[bool, tuple[np.ndarray, np.ndarray]] = {}
_NO_BYTES = np.zeros(0, dtype=np.uint8)
_BUFFER = [_NO_BYTES]
_BUFFER_KEEP = 64 * 2**20
_ASCII_CLASS = np.array(
    [0 if chr(c).isspace() else 1 if (chr(c).isalnum() or c == 95) else 2 for c in range(128)], dtype=np.uint8
)  # the classes of \s, \w and the rest, as re sees them


def minhash_values(text: str, *, num_perm: int, shingle_size: int, seed: int, backend: str = "numba") -> np.ndarray:
    """The MinHash of ``text`` (``definition.minhash_values``), by ``backend``."""
    return sign(
        [text],
        normalise=False,
        key=False,
        near_chars=len(text),
        num_perm=num_perm,
        shingle_size=shingle_size,
        seed=seed,
        backend=backend,
    )[0][1]


def sign(
    texts: list[str],
    *,
    normalise: bool,
    key: bool,
    near_chars: int,
    num_perm: int,
    shingle_size: int,
    seed: int,
    backend: str = "numba",
) -> list[tuple[str | None, np.ndarray]]:
    """For each text: (``exact_key`` of its normalised form when ``key``, MinHash values of that form's first
    ``near_chars`` characters). ``normalise``: the texts are ``definition.joined_text`` output, collapsed and
    lower-cased here; otherwise taken as they are (the MinHash of a text does not depend on its whitespace)."""
    if shingle_size < 1:
        raise ValueError("shingle_size must be at least 1")
    if backend == "numpy":
        out = []
        for text in texts:
            norm = " ".join(text.split()).lower() if normalise else text
            out.append(
                (
                    D.exact_key(norm) if key else None,
                    D.minhash_values(norm[:near_chars], num_perm=num_perm, shingle_size=shingle_size, seed=seed),
                )
            )
        return out
    if backend != "numba":
        raise ValueError(f"unknown dedup backend {backend!r}; known: {', '.join(BACKENDS)}")
    return _compiled(
        texts,
        normalise=normalise,
        key=key,
        near_chars=near_chars,
        num_perm=num_perm,
        shingle_size=shingle_size,
        seed=seed,
    )


def _class(ch: str) -> int:
    return int(_ASCII_CLASS[ord(ch)]) if ord(ch) < 128 else 0 if ch.isspace() else 1 if ch.isalnum() else 2


def _tables(lower: bool) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's per-code-point tables for one mode: the mapped form (lower case, or the code point itself) and
    that form's token class (0 for whitespace); filled for ASCII now and for other code points when first met."""
    # heavy: numba, loaded by the first compiled pass (commands that build no dataset never load it)
    from harnessfit.dataset.dedup.kernel import UNKNOWN

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
    # heavy: numba, loaded by the first compiled pass (commands that build no dataset never load it)
    from harnessfit.dataset.dedup.kernel import OWN_LOWER, UNKNOWN

    low, cls = tables
    for c in np.unique(cp[cls[cp] == UNKNOWN]).tolist():
        ch = chr(c)
        lc = ch.lower() if lower else ch
        if len(lc) != 1 or (lower and c == _CAPITAL_SIGMA):
            cls[c] = OWN_LOWER
            continue
        low[c] = ord(lc)
        cls[c] = 0 if ch.isspace() else _class(lc)


def _compiled(
    texts: list[str], *, normalise: bool, key: bool, near_chars: int, num_perm: int, shingle_size: int, seed: int
) -> list[tuple[str | None, np.ndarray]]:
    # heavy: numba, loaded by the first compiled pass (commands that build no dataset never load it)
    from harnessfit.dataset.dedup import kernel

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
    a, b = D.permutations(num_perm, seed)
    mult = D.multipliers(shingle_size)
    results: list[tuple[str | None, np.ndarray]] = []
    start = 0
    while start < len(texts):
        base = bounds[start]
        status, done, ub, mins = kernel.signatures(
            src[base:], bounds[start:] - base, *tables, out, near_chars, mult, shingle_size, a, b
        )
        for t in range(done):
            results.append((hashlib.sha256(out[ub[t] : ub[t + 1]]).hexdigest() if key else None, mins[t]))
        start += done
        if status == kernel.UNKNOWN:  # enter the text's new code points, then go on from it
            _fill(tables, np.frombuffer(texts[start].encode("utf-32-le", "surrogatepass"), dtype="<u4"), normalise)
        elif status == kernel.OWN_LOWER:  # lower-case this one as a whole string, then take it as it is
            results += _compiled(
                [" ".join(texts[start].split()).lower()],
                normalise=False,
                key=key,
                near_chars=near_chars,
                num_perm=num_perm,
                shingle_size=shingle_size,
                seed=seed,
            )
            start += 1
    if len(_BUFFER[0]) > _BUFFER_KEEP:  # a batch with a very large conversation: do not hold its buffer on
        _BUFFER[0] = _NO_BYTES
    return results
