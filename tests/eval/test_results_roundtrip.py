"""Results files written before the scorer registry and the shared results header (issue 31) come out byte for byte
the same through today's code: every family is loaded and written again, and the eval runs are re-scored from their
episode files (Pi's event stream and session file of real Pi episodes) and re-aggregated first.

The files in tests/eval/data/results_before were written by the code of d8c90d2: eval runs of the real Pi (scripted
golden solver on two tasks x two seeds, a double-encoding model, a model that never stops), and the probe, raw and
pairwise runs of tests/eval/test_{probe,raw_run,pairwise}.py. Only each episode's event stream and session file are
kept beside the results (the scorers read nothing else).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from harnessfit.errors import UserError
from harnessfit.eval.episode import FAILURES
from harnessfit.eval.pairwise.results import load_pairwise_results, write_pairwise_results
from harnessfit.eval.probe.results import load_probe_results, write_probe_results
from harnessfit.eval.raw.results import load_raw_results, write_raw_results
from harnessfit.eval.results import RATE_METRICS, aggregate, load_results, write_results
from harnessfit.eval.scorers import load_card_or_none, score_episode
from harnessfit.eval.task import load_task

DATA = Path(__file__).parent / "data" / "results_before"
FAMILIES = {
    "probe": (load_probe_results, write_probe_results),
    "raw": (load_raw_results, write_raw_results),
    "pairwise": (load_pairwise_results, write_pairwise_results),
}


# metrics added after the fixtures were written (issue 32): checked for their own values, left out of the comparison
ADDED = {
    "final_validation_clean": "Final validation clean",
    "repeated_failed_call": "Repeated a failed call",
}


def _without_added(obj):
    if isinstance(obj, dict):
        return {k: _without_added(v) for k, v in obj.items() if k not in ADDED}
    if isinstance(obj, list):
        return [_without_added(v) for v in obj]
    return obj


def _same_files(before: Path, after: Path) -> None:
    for name in ("results.json", "results.md"):
        assert (after / name).read_bytes() == (before / name).read_bytes(), name


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_stage_results_round_trip_byte_for_byte(family: str, tmp_path: Path) -> None:
    load, write = FAMILIES[family]
    results = load(DATA / family)
    assert results.status == "success"
    write(results, tmp_path)
    _same_files(DATA / family, tmp_path)


@pytest.mark.parametrize("run", ["eval-golden", "eval-double-encode", "eval-never-stop"])
def test_eval_results_rescored_byte_for_byte(run: str, tmp_path: Path, default_suite: Path) -> None:
    before = DATA / run
    results = load_results(before)
    stored = _without_added([e.metrics.model_dump(mode="json") for e in results.episodes])
    card = load_card_or_none(results.pi_version)
    for episode in results.episodes:
        task = load_task(default_suite / episode.facts.task_id)
        episode.metrics = score_episode(episode.facts, task, before, card)
    rescored = [e.metrics.model_dump(mode="json") for e in results.episodes]
    assert _without_added(rescored) == stored
    # the golden solver's last validation run passes; the model that never stops never runs it
    assert {e["final_validation_clean"] for e in rescored} == {run == "eval-golden"}
    # the double-encoding model sends its refused call again unchanged in one of its episodes; nothing else repeats
    assert [e["repeated_failed_call"] for e in rescored].count(True) == (run == "eval-double-encode")
    assert _without_added(aggregate(results.episodes, results.config["seeds"])) == results.aggregates
    write_results(results, tmp_path)
    assert _without_added(orjson.loads((tmp_path / "results.json").read_bytes())) == orjson.loads(
        (before / "results.json").read_bytes()
    )
    md = [
        line
        for line in (tmp_path / "results.md").read_text().splitlines()
        if not any(label in line for label in ADDED.values())
    ]
    assert md == (before / "results.md").read_text().splitlines()


def test_the_verdicts_and_rates_keep_their_order() -> None:
    """The failure order (first that applies wins) and the rate rows are the ones results files were written with."""
    assert FAILURES == (
        "cap_disk",
        "cap_fsize",
        "cap_pids",
        "cap_cpu",
        "cap_memory",
        "runaway",
        "timeout",
        "endpoint_error",
        "turn_cap",
        "double_encoded_arguments",
        "invalid_tool_calls",
        "no_final_response",
        "checker_failed",
        "expected_change_missing",
    )
    assert [(field, good) for _, field, good in RATE_METRICS] == [
        ("complete_loop", True),
        ("expected_change", True),
        ("validation_used", True),
        ("final_validation_clean", True),
        ("finished_with_response", True),
        ("checker_passed", True),
        ("repeated_failed_call", False),
        ("runaway", False),
        ("turn_cap_hit", False),
        ("timed_out", False),
        ("endpoint_error", False),
    ]


LOADERS = {**{f: load for f, (load, _) in FAMILIES.items()}, "eval-golden": load_results}


@pytest.mark.parametrize("family", sorted(LOADERS))
def test_every_family_shares_the_run_lifecycle(family: str, tmp_path: Path) -> None:
    """``started`` is written on entry; a raise records ``error`` (a UserError's own words, else the exception's
    type) with no Markdown verdict lost; ``finish`` records the success."""
    results = LOADERS[family](DATA / family)
    results.status = "started"
    with pytest.raises(UserError), results.lifecycle(tmp_path / "u"):
        assert LOADERS[family](tmp_path / "u").status == "started" and not (tmp_path / "u" / "results.md").exists()
        raise UserError("the endpoint went away")
    again = LOADERS[family](tmp_path / "u")
    assert (again.status, again.error) == ("error", "the endpoint went away")
    assert "the endpoint went away" in (tmp_path / "u" / "results.md").read_text(encoding="utf-8")
    results.status, results.error = "started", None
    with pytest.raises(RuntimeError), results.lifecycle(tmp_path / "r"):
        raise RuntimeError("boom")
    assert LOADERS[family](tmp_path / "r").error == "RuntimeError: boom"
    results.status, results.error = "started", None
    with results.lifecycle(tmp_path / "s"):
        pass
    results.finish(tmp_path / "s")
    assert LOADERS[family](tmp_path / "s").status == "success" and (tmp_path / "s" / "results.md").is_file()
