"""Side-by-side before/after table from results files (built from hand-made episodes, no Pi needed)."""

from __future__ import annotations

import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.errors import UserError
from harnessfit.eval.episode import Episode, EpisodeFacts, EpisodeMetrics
from harnessfit.eval.results import EvalResults, aggregate, write_results
from harnessfit.report import compare


def _episode(task: str, seed: int, ok: bool, failure: str | None = None, error: str | None = None) -> Episode:
    facts = EpisodeFacts(
        task_id=task,
        seed=seed,
        sandbox="bwrap",
        max_turns=8,
        events_file="e",
        stderr_file="s",
        status="error" if error else "success",
        error=error,
    )
    if error:
        return Episode(facts=facts)
    metrics = EpisodeMetrics(
        complete_loop=ok,
        expected_change=ok,
        validation_used=True,
        finished_with_response=ok,
        checker_passed=ok,
        tool_calls_total=3,
        tool_calls_valid=3 if ok else 1,
        tool_calls_invalid=0 if ok else 2,
        invalid_by_reason={} if ok else {"arguments_double_encoded": 2},
        double_encoded_arguments=0 if ok else 2,
        runaway=False,
        timed_out=False,
        turn_cap_hit=False,
        endpoint_error=False,
        turns=4,
        tokens_input=10,
        tokens_output=5,
        tokens_total=15,
        wall_seconds=1.0,
        stop_reason="stop",
        failure=failure,
    )
    return Episode(facts=facts, metrics=metrics)


def _write(tmp_path, name, episodes, status="success"):
    res = EvalResults(
        model={"name": name},
        suite={"name": "default", "tasks": ["a", "b"], "sha256": "x"},
        config={"seeds": 2},
        sandbox="bwrap",
        pi_version="0.73.1",
        episodes=episodes,
        aggregates=aggregate(episodes, 2),
        status=status,
    )
    return write_results(res, tmp_path / name)


def test_before_after_table(tmp_path):
    before = _write(
        tmp_path,
        "base",
        [
            _episode("a", 0, True),
            _episode("a", 1, False, "double_encoded_arguments"),
            _episode("b", 0, False, "double_encoded_arguments"),
            _episode("b", 1, False, "double_encoded_arguments"),
        ],
    )
    after = _write(
        tmp_path,
        "tuned",
        [
            _episode("a", 0, True),
            _episode("a", 1, True),
            _episode("b", 0, True),
            _episode("b", 1, False, "checker_failed", error="pi exited with code 1"),
        ],
    )
    md = compare([before, after.parent], tmp_path / "cmp.md").read_text()
    assert "| Metric | base | tuned |" in md
    # base: 1/4 complete; tuned: 3/3 scored (the errored episode is unscored, not a failure)
    assert (
        "| Complete loop (checker passed + expected change + final response) | 25% [5–70] (1/4) | 100% [44–100] (3/3) |"
        in md
    )
    assert "double_encoded_arguments 3" in md
    assert "| Scored / unscored episodes | 4 / 0 | 3 / 1 |" in md
    assert "| pass@2 | 50% | 100% |" in md
    assert "| pass^2 | 0% | 100% |" in md  # task b has only one scored try in "tuned": skipped for k=2
    data = orjson.loads((tmp_path / "cmp.json").read_bytes())
    assert data["models"] == ["base", "tuned"]
    assert data["metrics"]["complete_loop"][0]["successes"] == 1


def test_compare_refuses_unfinished_and_single(tmp_path):
    done = _write(tmp_path, "done", [_episode("a", 0, True)])
    running = _write(tmp_path, "running", [], status="started")
    with pytest.raises(UserError, match="at least two"):
        compare([done], tmp_path / "x.md")
    with pytest.raises(UserError, match="not finished"):
        compare([done, running], tmp_path / "x.md")
    (tmp_path / "junk.json").write_text("{}")
    with pytest.raises(UserError, match="not a harnessfit eval results file"):
        compare([done, tmp_path / "junk.json"], tmp_path / "x.md")


def test_compare_cli(tmp_path):
    a = _write(tmp_path, "a", [_episode("a", 0, True)])
    b = _write(tmp_path, "b", [_episode("a", 0, False, "checker_failed")])
    res = CliRunner().invoke(app, ["eval", "compare", str(a), str(b), "--out", str(tmp_path / "t.md")])
    assert res.exit_code == 0, res.output
    assert "| Metric | a | b |" in res.output and (tmp_path / "t.json").is_file()
