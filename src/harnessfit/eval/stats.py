"""Aggregate statistics for eval rates: Wilson score intervals, pass@k and pass^k over seeds.

Small samples (9 tasks x a few seeds) make the normal approximation useless near 0 and 1; the Wilson interval
stays inside [0, 1] and is what published agent benchmarks report. pass@k (at least one of k tries succeeds, the
unbiased estimator of Chen et al. 2021) and pass^k (all k tries succeed, as in tau-bench) separate "can do it"
from "does it reliably".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "Rate",
    "wilson_interval",
    "rate",
    "pass_at_k",
    "pass_hat_k",
    "mean_over_tasks",
    "t_quantile_975",
    "mean_interval",
]

Z95 = 1.959963984540054


class Rate(tuple):
    """``(successes, n, value, low, high)``; ``value``/bounds are NaN when ``n == 0`` (nothing scored)."""

    __slots__ = ()

    def __new__(cls, successes: int, n: int, value: float, low: float, high: float) -> Rate:
        return super().__new__(cls, (successes, n, value, low, high))

    @property
    def successes(self) -> int:
        return self[0]

    @property
    def n(self) -> int:
        return self[1]

    @property
    def value(self) -> float:
        return self[2]

    @property
    def low(self) -> float:
        return self[3]

    @property
    def high(self) -> float:
        return self[4]

    def as_dict(self) -> dict[str, float | int | None]:
        def clean(x: float) -> float | None:
            return None if math.isnan(x) else round(x, 6)

        return {
            "successes": self.successes,
            "n": self.n,
            "rate": clean(self.value),
            "ci95_low": clean(self.low),
            "ci95_high": clean(self.high),
        }


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for ``successes`` out of ``n``; (nan, nan) when ``n == 0``."""
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return (math.nan, math.nan)
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def rate(successes: int, n: int) -> Rate:
    low, high = wilson_interval(successes, n)
    return Rate(successes, n, successes / n if n else math.nan, low, high)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of ``k`` tries drawn from ``n`` (``c`` correct) succeeds."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"need 0 < k <= n and 0 <= c <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all ``k`` tries drawn from ``n`` (``c`` correct) succeed (tau-bench's pass^k)."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"need 0 < k <= n and 0 <= c <= n, got n={n} c={c} k={k}")
    return math.comb(c, k) / math.comb(n, k)


def mean_over_tasks(per_task: Sequence[tuple[int, int]], k: int, fn) -> float:
    """Average ``fn(n, c, k)`` over tasks given as ``(n, c)``; tasks with fewer than ``k`` scored tries are skipped."""
    values = [fn(n, c, k) for n, c in per_task if n >= k]
    return sum(values) / len(values) if values else math.nan


# Student's t quantile t(0.975, df) for df = 1..30 (standard tables); beyond 30 the Cornish-Fisher expansion below
# is within 0.001 of it.
_T975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)


def t_quantile_975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom (two-sided 95% intervals)."""
    if df < 1:
        raise ValueError(f"need df >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = Z95
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df)


def mean_interval(
    values: Sequence[float], lo: float = -math.inf, hi: float = math.inf
) -> dict[str, float | int | None]:
    """Mean of ``values`` with its 95% t interval (clipped to ``[lo, hi]``, e.g. a 1–5 scale); None where undefined
    (no value: no mean; one value: no interval)."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "ci95_low": None, "ci95_high": None}
    mean = sum(values) / n
    if n == 1:
        return {"n": 1, "mean": round(mean, 6), "ci95_low": None, "ci95_high": None}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    return {
        "n": n,
        "mean": round(mean, 6),
        "ci95_low": round(max(lo, mean - half), 6),
        "ci95_high": round(min(hi, mean + half), 6),
    }
