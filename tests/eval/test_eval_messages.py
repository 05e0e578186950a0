"""What `eval agent` says as it works and when it cannot start: a line per episode, a default suite found from any
folder, and a dead endpoint named as such (not a hint to pass --model-id)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harnessfit.errors import UserError
from harnessfit.eval.episode import Episode, EpisodeFacts, EpisodeMetrics
from harnessfit.eval.run import default_suite, episode_line, resolve_model_id

REPO = Path(__file__).resolve().parents[2]


def test_default_suite_is_found_from_another_working_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_suite() == REPO / "examples" / "tasks" / "default"


def _metrics(**kw) -> EpisodeMetrics:
    base = dict(
        complete_loop=False,
        expected_change=False,
        validation_used=False,
        finished_with_response=False,
        checker_passed=False,
        tool_calls_total=3,
        tool_calls_valid=2,
        tool_calls_invalid=1,
        double_encoded_arguments=0,
        runaway=False,
        timed_out=False,
        turn_cap_hit=True,
        endpoint_error=False,
        turns=6,
        tokens_input=10,
        tokens_output=5,
        tokens_total=15,
        wall_seconds=41.6,
        stop_reason=None,
        failure="turn_cap",
    )
    return EpisodeMetrics(**{**base, **kw})


def test_episode_line_names_task_outcome_turns_and_seconds() -> None:
    facts = EpisodeFacts(
        task_id="edit_constant",
        seed=1,
        sandbox="bwrap",
        max_turns=6,
        wall_seconds=41.6,
        events_file="e",
        stderr_file="s",
    )
    assert episode_line(Episode(facts=facts, metrics=_metrics())) == (
        "eval: edit_constant seed 1: failed (turn_cap), 6 turn(s), 2/3 valid calls, 42 s"
    )
    won = Episode(facts=facts, metrics=_metrics(complete_loop=True, failure=None))
    assert "complete loop" in episode_line(won, "synth") and episode_line(won, "synth").startswith("synth: ")
    flagged = Episode(facts=facts, metrics=_metrics(integrity_flag="session_file_differs_from_events"))
    assert "unscored (integrity: session_file_differs_from_events)" in episode_line(flagged)
    broken = facts.model_copy(update={"status": "error", "error": "pi exited 1\ntrace"})
    assert episode_line(Episode(facts=broken)) == "eval: edit_constant seed 1: unscored (error: pi exited 1), 42 s"


def test_a_dead_endpoint_is_named_as_such() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(UserError) as err:
        resolve_model_id(f"http://127.0.0.1:{port}/v1")
    assert "no server answers" in str(err.value) and "--model-id" not in str(err.value)
