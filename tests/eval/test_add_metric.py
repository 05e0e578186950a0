"""Adding a metric to ``eval agent`` is one decorated function: registered in a test (and removed after it), it shows
in each episode's ``scores``, in the aggregates and in the results Markdown; a metric that cannot say gives an
explicit unscored reason, and one that breaks leaves only itself unscored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from harnessfit.eval.results import aggregate, load_results, write_results
from harnessfit.eval.run import run_eval
from harnessfit.eval.scorers import BUILTIN_METRICS, load_card_or_none, score_episode
from harnessfit.eval.scoring import SCORERS, Unscored, scorer, unregister
from harnessfit.eval.task import load_task

DATA = Path(__file__).parent / "data" / "results_before"
TOYS = ("toy_used_bash", "toy_calls_per_turn", "toy_broken")


@pytest.fixture
def toy_metrics() -> Iterator[None]:
    @scorer(aggregate="rate", label="Toy: ran bash")
    def toy_used_bash(ep) -> bool:
        return any(call.name == "bash" for call in ep.calls)

    @scorer(aggregate="mean", label="Toy: tool calls per turn")
    def toy_calls_per_turn(ep) -> float | Unscored:
        turns = ep.value("turns")
        return Unscored("no turn") if turns == 0 else ep.value("tool_calls_total") / turns

    @scorer()
    def toy_broken(ep) -> int:
        raise RuntimeError("toy bug")

    try:
        yield
    finally:
        for name in TOYS:
            unregister(name)


def test_a_registered_metric_reaches_results_and_markdown(toy_metrics, tmp_path: Path, default_suite: Path) -> None:
    results = load_results(DATA / "eval-golden")
    for episode in results.episodes:
        task = load_task(default_suite / episode.facts.task_id)
        episode.metrics = score_episode(episode.facts, task, DATA / "eval-golden", load_card_or_none())
    results.aggregates = aggregate(results.episodes, results.config["seeds"])
    write_results(results, tmp_path)
    data = orjson.loads((tmp_path / "results.json").read_bytes())
    for episode in data["episodes"]:
        scores = episode["metrics"]["scores"]
        assert scores["toy_used_bash"] == {"value": True, "unscored": None}  # the golden solver runs the check
        assert scores["toy_calls_per_turn"]["value"] == pytest.approx(0.75)  # 3 calls over 4 turns
        assert scores["toy_broken"] == {"value": None, "unscored": "scorer failed: RuntimeError: toy bug"}
        assert episode["metrics"]["complete_loop"] is True  # the built-in metrics are untouched
    agg = data["aggregates"]
    assert agg["rates"]["toy_used_bash"] == {
        "successes": 4,
        "n": 4,
        "rate": 1.0,
        "ci95_low": pytest.approx(0.51, abs=0.01),
        "ci95_high": 1.0,
    }
    assert agg["means"]["toy_calls_per_turn"] == 0.75
    assert agg["metrics_unscored"] == {"toy_broken": 4}
    md = (tmp_path / "results.md").read_text(encoding="utf-8")
    assert "| Toy: ran bash | 100% [51–100] (4/4) |" in md
    assert "| Toy: tool calls per turn | 0.75 (mean) |" in md


def test_the_registry_is_the_metrics_fields() -> None:
    """Every built-in metric (a field of EpisodeMetrics) has its scorer, and nothing else is registered."""
    assert set(BUILTIN_METRICS) == set(SCORERS)
    assert "failure" not in SCORERS and "scores" not in BUILTIN_METRICS


def test_a_name_is_registered_once(toy_metrics) -> None:
    with pytest.raises(ValueError, match="already registered"):
        scorer(name="toy_used_bash")(lambda ep: True)
    with pytest.raises(ValueError, match="aggregate"):
        scorer(aggregate="median")


@pytest.mark.slow
@pytest.mark.pi
def test_a_registered_metric_through_the_real_runner(toy_metrics, pi_installed, small_suite, tmp_path) -> None:
    results = run_eval("scripted:golden", small_suite, tmp_path / "run", workers=2, progress=False)
    assert all(e.metrics.scores["toy_used_bash"].value is True for e in results.episodes)
    assert results.aggregates["rates"]["toy_used_bash"]["successes"] == 2
    assert "| Toy: ran bash |" in (tmp_path / "run" / "results.md").read_text(encoding="utf-8")
