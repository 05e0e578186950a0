"""A banded MinHash LSH index: ``bands`` slices of ``rows`` values each; two signatures are candidates when one
slice is equal (Mining of Massive Datasets, ch. 3). The band count and width are the ones datasketch's
``MinHashLSH`` picks for the same threshold and permutation count (the pair that minimises the false-positive
plus false-negative probability mass, equal weights, integrated the same way), so the candidates, and with them
the build's near-duplicate verdicts, are the same as with datasketch's index."""

from __future__ import annotations

from functools import cache

import numpy as np

__all__ = ["lsh_params", "BandedIndex"]


def _candidate(s: float, b: int, r: int) -> float:
    """The probability that two signatures of Jaccard similarity ``s`` share one of ``b`` bands of ``r`` rows."""
    return 1 - (1 - s ** float(r)) ** float(b)


@cache
def lsh_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) with bands * rows <= num_perm minimising the area under the false-positive probability
    (similarity below ``threshold`` yet a candidate) plus the area over the false-negative one (similarity at or
    above it yet no candidate), each weighted one half."""
    from scipy.integrate import quad

    best, best_error = (0, 0), float("inf")
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp, _ = quad(_candidate, 0.0, threshold, args=(b, r))
            fn, _ = quad(lambda s, b=b, r=r: 1 - _candidate(s, b, r), threshold, 1.0)
            error = fp * 0.5 + fn * 0.5
            if error < best_error:
                best, best_error = (b, r), error
    if best[0] < 2:
        raise ValueError(f"near-duplicate threshold {threshold} with {num_perm} permutations gives fewer than 2 bands")
    return best


class BandedIndex:
    """Keys by band: ``insert(key, values)``, ``query(values)`` -> the keys sharing at least one band."""

    def __init__(self, threshold: float, num_perm: int) -> None:
        self.bands, self.rows = lsh_params(threshold, num_perm)
        self.num_perm = num_perm
        self._tables: list[dict[bytes, list[str]]] = [{} for _ in range(self.bands)]

    def _slices(self, values: np.ndarray) -> list[bytes]:
        if len(values) != self.num_perm:
            raise ValueError(f"expected {self.num_perm} MinHash values, got {len(values)}")
        r = self.rows
        return [values[i * r : (i + 1) * r].tobytes() for i in range(self.bands)]

    def query(self, values: np.ndarray) -> set[str]:
        out: set[str] = set()
        for table, band in zip(self._tables, self._slices(values), strict=True):
            keys = table.get(band)
            if keys:
                out.update(keys)
        return out

    def insert(self, key: str, values: np.ndarray) -> None:
        for table, band in zip(self._tables, self._slices(values), strict=True):
            table.setdefault(band, []).append(key)
