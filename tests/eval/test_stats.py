import math

import pytest

from harnessfit.eval.stats import mean_over_tasks, pass_at_k, pass_hat_k, rate, wilson_interval


def test_wilson_known_values():
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(0.236593, abs=1e-6)
    assert high == pytest.approx(0.763407, abs=1e-6)
    low, high = wilson_interval(9, 9)
    assert (round(low, 4), high) == (0.7009, 1.0)
    low, high = wilson_interval(0, 9)
    assert (low, round(high, 4)) == (0.0, 0.2991)


def test_wilson_empty_and_invalid():
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    assert rate(0, 0).as_dict()["rate"] is None


def test_pass_at_k_and_pass_hat_k():
    # n=5 tries, c=2 correct, k=2: pass@2 = 1 - C(3,2)/C(5,2) = 0.7; pass^2 = C(2,2)/C(5,2) = 0.1
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert pass_at_k(3, 0, 1) == 0.0
    assert pass_at_k(3, 3, 3) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_hat_k(4, 4, 4) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_mean_over_tasks_skips_short_tasks():
    # task A: 2/2, task B: 0/2, task C has only 1 try (skipped for k=2)
    pairs = [(2, 2), (2, 0), (1, 1)]
    assert mean_over_tasks(pairs, 2, pass_hat_k) == pytest.approx(0.5)
    assert mean_over_tasks(pairs, 1, pass_at_k) == pytest.approx(2 / 3)
    assert math.isnan(mean_over_tasks([(1, 1)], 2, pass_at_k))
