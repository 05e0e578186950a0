from harnessfit.convert.rejection import Reason
from harnessfit.dataset.dedup import Deduper

from dataset_convs import corpus, make_conv


def _steps(extra: str = ""):
    body = "\n".join(f"line {i}: value = compute({i}, factor=3)" for i in range(60))
    return [("read", {"path": "src/app.py"}, body + extra),
            ("bash", {"command": "python -m pytest -q"}, "12 passed in 0.41s")]


def test_near_duplicate_pair_collapses_to_one():
    a = make_conv("Add input validation to app.py", _steps(), answer="Validation added; all tests pass.")
    b = make_conv("Add input validation to app.py", _steps("\nline 61: value = compute(61, factor=3)"),
                  answer="Validation added; all tests pass!", salt="x")
    other = corpus(4)
    d = Deduper(threshold=0.8)
    verdicts = [d.check(c) for c in [a, *other, b]]
    dropped = [v for v in verdicts if v is not None]
    assert len(dropped) == 1
    assert dropped[0].record_id == b.id and dropped[0].kept_id == a.id
    assert dropped[0].reason == Reason.duplicate_near


def test_exact_duplicate_ignores_call_ids_and_whitespace():
    a = make_conv("Rename foo to bar", _steps())
    b = make_conv("Rename  foo to bar ", _steps(), salt="-other-ids")
    d = Deduper()
    assert d.check(a) is None
    r = d.check(b)
    assert r is not None and r.reason == Reason.duplicate_exact and r.kept_id == a.id


def test_distinct_conversations_survive():
    d = Deduper()
    convs = corpus(12)
    assert all(d.check(c) is None for c in convs)
