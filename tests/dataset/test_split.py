import pytest

from harnessfit.dataset.split import assign_splits, check_no_overlap


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


def test_joined_groups_share_their_parents_split_and_move_no_parent():
    """A sub-agent's run (its own root request) is joined to its parent's: it lands in the parent's split, also down
    a chain, and joining moves no parent."""
    ratios = {"train": 0.6, "validation": 0.2, "test": 0.2}
    parents = [f"p{i}" for i in range(60)]
    joined = {f"c{i}": f"p{i}" for i in range(60)} | {f"gc{i}": f"c{i}" for i in range(60)}
    plain = assign_splits(parents, ratios, seed=5)
    a = assign_splits([*parents, *joined], ratios, seed=5, joined=joined)
    assert {g: a[g] for g in parents} == plain
    assert all(a[f"c{i}"] == a[f"gc{i}"] == a[f"p{i}"] for i in range(60))
    assert len(set(a.values())) == 3


def test_a_group_joined_to_an_absent_parent_is_its_own():
    a = assign_splits(["g1", "g2", "c"], {"train": 0.5, "validation": 0.5}, seed=1, joined={"c": "gone"})
    assert set(a) == {"g1", "g2", "c"}
