from harnessfit.dataset.split import assign_splits, check_no_overlap

import pytest


def test_groups_never_span_splits_and_assignment_is_order_free():
    groups = [f"g{i}" for i in range(200)]
    a = assign_splits(groups, {"train": 0.8, "validation": 0.1, "test": 0.1}, seed=3)
    b = assign_splits(list(reversed(groups)) + groups[:50], {"train": 0.8, "validation": 0.1, "test": 0.1}, seed=3)
    assert a == b
    counts = {s: sum(1 for v in a.values() if v == s) for s in ("train", "validation", "test")}
    assert 130 <= counts["train"] <= 185 and counts["validation"] > 0 and counts["test"] > 0
    check_no_overlap({s: {g for g, v in a.items() if v == s} for s in counts})
    c = assign_splits(groups, {"train": 0.8, "validation": 0.1, "test": 0.1}, seed=4)
    assert c != a  # the seed matters


def test_small_corpus_still_gets_validation():
    for n in (2, 3):
        a = assign_splits([f"g{i}" for i in range(n)], {"train": 0.9, "validation": 0.1}, seed=0)
        assert "validation" in a.values() and "train" in a.values()
    assert set(assign_splits(["only"], {"train": 0.9, "validation": 0.1}, seed=0).values()) == {"train"}


def test_overlap_check_names_the_group():
    with pytest.raises(AssertionError, match="g1"):
        check_no_overlap({"train": {"g1", "g2"}, "validation": {"g1"}})
