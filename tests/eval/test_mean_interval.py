"""The t interval of a mean (the pairwise rubric's): table values, the large-df expansion, clipping, small n."""

from __future__ import annotations

import math

import pytest

from harnessfit.eval.stats import mean_interval, t_quantile_975


@pytest.mark.parametrize(
    ("df", "t"), [(1, 12.706), (9, 2.262), (30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980), (10_000, 1.960)]
)
def test_t_quantile_matches_the_tables(df: int, t: float) -> None:
    assert t_quantile_975(df) == pytest.approx(t, abs=1.5e-3)


def test_mean_interval_by_hand_and_clipped() -> None:
    values = [5, 5, 2, 5, 5]
    mean, sd = 4.4, math.sqrt(sum((v - 4.4) ** 2 for v in values) / 4)
    half = 2.776 * sd / math.sqrt(5)
    got = mean_interval(values, 1, 5)
    assert got["n"] == 5 and got["mean"] == pytest.approx(mean)
    assert got["ci95_low"] == pytest.approx(mean - half, abs=1e-6)
    assert got["ci95_high"] == 5  # clipped to the scale
    assert mean_interval([3]) == {"n": 1, "mean": 3.0, "ci95_low": None, "ci95_high": None}
    assert mean_interval([])["mean"] is None
    with pytest.raises(ValueError):
        t_quantile_975(0)
