"""Side branches of a Pi session tree are rejected from their own entries, never built: a session a user kept
regenerating (one side branch per turn, each root→leaf path as long as its turn) used to cost time quadratic in its
length (0.3 MB, 500 branches: 12 s). The bound here is loose on purpose (a shared machine); bench/pi_branches.py
prints the figures."""

from __future__ import annotations

import time
from pathlib import Path

from _helpers.pi_sessions import branchy_session
from harnessfit.convert import convert
from harnessfit.core import Reason, Rejection, Trajectory
from harnessfit.formats.pi.reader import PiReader
from harnessfit.harness.card import load_card


def test_two_thousand_side_branches_read_in_seconds(tmp_path: Path) -> None:
    path = branchy_session(2000).write(tmp_path / "branchy.jsonl")
    t0 = time.perf_counter()
    records = list(PiReader().read(path))
    elapsed = time.perf_counter() - t0
    assert elapsed < 20, f"{elapsed:.1f} s for 2,000 side branches"
    active = [r for r in records if isinstance(r, Trajectory)]
    side = [r for r in records if isinstance(r, Rejection)]
    assert len(active) == 1 and len(active[0].steps) == 4000
    assert len(side) == 2000 and {r.reason for r in side} == {Reason.side_branch}


def test_a_side_branch_row_names_its_own_lines_and_keeps_its_id(tmp_path: Path) -> None:
    s = branchy_session(3)
    path = s.write(tmp_path / "in" / "b.jsonl")
    summary = convert([path.parent], tmp_path / "out", load_card("pi", "0.73.1"))
    assert summary.read == 4 and summary.accepted == 1 and summary.rejected == 3
    rows = [r for r in PiReader().read(path, "in/b.jsonl") if isinstance(r, Rejection)]
    # entry k is on line k + 2 (the header is line 1); turn i's discarded draft is entry 3 i + 1
    assert [(r.line_start, r.line_end) for r in rows] == [(3, 3), (6, 6), (9, 9)]
    assert all(r.file == "in/b.jsonl" and "line" in r.detail for r in rows)
    # the id is the one the trajectory of that leaf has always had, so ledgers stay comparable
    ids = {r.record_id for r in rows}
    assert ids == {PiReader().trajectory(path, r_sha(path), key=f"leaf:e{3 * i + 1}", steps=[]).id for i in range(3)}


def r_sha(path: Path) -> str:
    from harnessfit.formats.reading import file_sha256

    return file_sha256(path)


def test_a_side_branch_several_entries_long_spans_them(tmp_path: Path) -> None:
    from _helpers.pi_sessions import Session

    s = Session()
    u = s.user("first")
    a = s.call("c1", "read", {"path": "a.py"}, parent=u)  # e1 — the branch the user left
    s.result("c1", "read", "print(1)", parent=a)  # e2
    s.answer("old answer")  # e3: side leaf, three entries off the active path
    s.answer("new answer", parent=u)  # e4: the active leaf
    rows = [r for r in PiReader().read(s.write(tmp_path / "t.jsonl")) if isinstance(r, Rejection)]
    assert [(r.reason, r.line_start, r.line_end) for r in rows] == [(Reason.side_branch, 3, 5)]
