"""Real Pi CLI in the loop: golden solver 9/9, each faulty scripted model fails with the right metric."""

from __future__ import annotations

import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.errors import UserError
from harnessfit.eval.episode_runner import Endpoint
from harnessfit.eval.results import load_results
from harnessfit.eval.run import run_eval, served_temperature

pytestmark = [pytest.mark.pi]


@pytest.mark.slow
def test_golden_solver_scores_all_tasks(pi_installed, default_suite, tmp_path):
    out = tmp_path / "golden"
    results = run_eval("scripted:golden", default_suite, out, seeds=1, workers=2, progress=False)
    assert results.status == "success"
    agg = results.aggregates
    assert agg["scored"] == len(results.episodes) >= 9
    assert agg["rates"]["complete_loop"]["successes"] == agg["scored"], [
        (e.facts.task_id, e.metrics and e.metrics.failure, e.facts.error) for e in results.episodes
    ]
    assert agg["rates"]["validation_used"]["rate"] == 1.0
    assert agg["rates"]["expected_change"]["rate"] == 1.0
    assert agg["tool_calls"]["invalid"] == 0
    assert agg["pass_at_k"] == {"1": 1.0}
    for ep in results.episodes:
        assert ep.facts.sandbox == results.sandbox
        assert ep.metrics.stop_reason == "stop" and ep.metrics.turns >= 2
        session = out / ep.facts.session_file
        header = orjson.loads(session.read_bytes().splitlines()[0])
        assert header["type"] == "session" and header["version"] == 3
    # the results file on disk is the finished, versioned one, with a Markdown twin
    on_disk = load_results(out)
    assert on_disk.status == "success" and on_disk.version == 1
    assert "| Complete loop" in (out / "results.md").read_text()


@pytest.mark.slow
def test_double_encoding_model_is_named(pi_installed, small_suite, tmp_path):
    results = run_eval("scripted:double-encode", small_suite, tmp_path / "de", workers=2, progress=False)
    for ep in results.episodes:
        m = ep.metrics
        assert not m.complete_loop
        assert m.failure == "double_encoded_arguments"
        assert m.double_encoded_arguments == m.tool_calls_total > 0
        assert m.invalid_by_reason["arguments_double_encoded"] == m.tool_calls_total
        # Pi's own error text: "Validation failed …" up to 0.x, "Invalid arguments for tool …" from 1.x
        pi_refusals = m.invalid_by_reason.get("pi_validation_failed", 0) + m.invalid_by_reason.get(
            "pi_invalid_arguments", 0
        )
        assert pi_refusals == m.tool_calls_total, m.invalid_by_reason
        assert not m.expected_change
    assert results.aggregates["failures"] == {"double_encoded_arguments": 2}


@pytest.mark.slow
def test_never_stopping_model_hits_turn_cap(pi_installed, small_suite, tmp_path):
    results = run_eval("scripted:never-stop", small_suite, tmp_path / "ns", workers=2, max_turns=3, progress=False)
    for ep in results.episodes:
        m = ep.metrics
        assert m.failure == "turn_cap" and m.turn_cap_hit
        assert not m.finished_with_response
        assert m.turns == 3 and m.tool_calls_total == 3
        assert m.stop_reason == "aborted"


@pytest.mark.slow
def test_an_answer_on_the_last_allowed_turn_is_no_cap_hit(pi_installed, small_suite, tmp_path):
    """The golden solver given exactly as many turns as its reference has steps: its last turn is the answer, Pi
    ends the run itself, and the loop is complete; one turn fewer and the cap stops it."""
    from harnessfit.eval.task import load_suite

    for task in load_suite(small_suite):
        steps = len(task.reference)
        exact = run_eval(
            "scripted:golden",
            small_suite,
            tmp_path / f"x{task.id}",
            task_ids=[task.id],
            max_turns=steps,
            progress=False,
        )
        (ep,) = exact.episodes
        assert ep.metrics.complete_loop and not ep.metrics.turn_cap_hit and ep.metrics.turns == steps
        short = run_eval(
            "scripted:golden",
            small_suite,
            tmp_path / f"s{task.id}",
            task_ids=[task.id],
            max_turns=steps - 1,
            progress=False,
        )
        (ep,) = short.episodes
        assert ep.metrics.turn_cap_hit and ep.metrics.failure == "turn_cap"


def test_runaway_model_via_cli(pi_installed, small_suite, tmp_path):
    out = tmp_path / "ra"
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "agent",
            "--model",
            "scripted:runaway",
            "--suite",
            str(small_suite),
            "--task",
            "create_hello_script",
            "--out",
            str(out),
            "--max-output-bytes",
            str(2 * 1024 * 1024),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "runaway 1" in res.output
    results = load_results(out / "results.json")
    (ep,) = results.episodes
    assert ep.facts.killed == "output_cap" and ep.facts.output_bytes > 2 * 1024 * 1024
    assert ep.metrics.runaway and ep.metrics.failure == "runaway"
    assert not ep.metrics.finished_with_response
    assert results.config["temperature"] is None  # a scripted model does not sample


def test_cli_rejects_unknown_scripted_model(tmp_path, small_suite):
    res = CliRunner().invoke(
        app, ["eval", "agent", "--model", "scripted:nope", "--suite", str(small_suite), "--out", str(tmp_path / "x")]
    )
    assert res.exit_code != 0
    assert "unknown scripted model" in str(res.exception)


@pytest.mark.slow
def test_the_tools_profile_runs_pi_with_its_optional_tools(pi_installed, small_suite, tmp_path):
    """`--harness pi@V+tools`: Pi is offered the profile's tools (grep/find/ls too), a grep call runs (ripgrep from
    `make setup`), and the episode is scored against the profile's card, so the call is a valid one."""
    import json

    from harnessfit.harness.card import load_card
    from harnessfit.harness.scripted import Reply
    from harnessfit.harness.versions import DEFAULT_PI_VERSION

    offered: list[list[str]] = []

    def responder(body, index):
        offered.append([t["function"]["name"] for t in body.get("tools") or []])
        if not any(m.get("role") == "tool" for m in body["messages"]):
            return Reply(tool_calls=[("grep", json.dumps({"pattern": "def", "path": "."}))])
        return Reply(text="Searched.")

    card = load_card("pi", DEFAULT_PI_VERSION, "tools")
    results = run_eval(
        "scripted:golden",
        small_suite,
        tmp_path / "tools",
        responder=responder,
        progress=False,
        harness=f"pi@{DEFAULT_PI_VERSION}+tools",
        task_ids=[_first_task(small_suite)],
    )
    assert offered and all(names == card.default_tools for names in offered), offered
    assert (
        results.config["harness"] == f"pi@{DEFAULT_PI_VERSION}+tools" and results.config["tools"] == card.default_tools
    )
    assert results.aggregates["tool_calls"]["invalid"] == 0, results.aggregates["tool_calls"]


@pytest.mark.slow
def test_golden_solver_under_the_tools_profile_via_cli(pi_installed, small_suite, tmp_path):
    """`eval agent --harness pi@V+tools` from the command line: the golden solver still completes its task, the
    results record the profile and its tools, and every call validates against the profile's card."""
    from harnessfit.harness.card import load_card
    from harnessfit.harness.versions import DEFAULT_PI_VERSION

    out = tmp_path / "cli-tools"
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "agent",
            "--model",
            "scripted:golden",
            "--suite",
            str(small_suite),
            "--task",
            "create_hello_script",
            "--out",
            str(out),
            "--harness",
            f"pi@{DEFAULT_PI_VERSION}+tools",
        ],
    )
    assert res.exit_code == 0, res.output
    results = load_results(out / "results.json")
    card = load_card("pi", DEFAULT_PI_VERSION, "tools")
    assert {"grep", "find", "ls"} <= set(card.default_tools)
    assert results.config["harness"] == f"pi@{DEFAULT_PI_VERSION}+tools"
    assert results.config["tools"] == card.default_tools
    (ep,) = results.episodes
    assert ep.metrics.complete_loop, (ep.metrics.failure, ep.facts.error)
    assert results.aggregates["tool_calls"]["invalid"] == 0


def _first_task(suite) -> str:
    return sorted(p.name for p in suite.iterdir() if (p / "task.yaml").is_file())[0]


def test_a_served_model_is_greedy_for_one_seed_and_samples_for_several():
    assert served_temperature("smollm2-135m", 1, None) == 0.0
    assert served_temperature("/models/qwen", 3, None) == 0.7  # seeds are independent tries, not one episode repeated
    assert served_temperature("smollm2-135m", 3, 1.0) == 1.0 and served_temperature("m", 1, 0.3) == 0.3
    with pytest.raises(UserError, match="same answer each time"):
        served_temperature("smollm2-135m", 3, 0.0)
    # no server is started for these: the endpoint samples as it was started, a scripted model does not sample
    for target in ("http://127.0.0.1:8000/v1", "scripted:golden", Endpoint("http://127.0.0.1:1/v1", "m", "m")):
        assert served_temperature(target, 3, None) is None
        with pytest.raises(UserError, match="an endpoint samples as it was started"):
            served_temperature(target, 1, 0.7)


def test_cli_refuses_a_temperature_for_an_endpoint_in_one_line(small_suite, tmp_path):
    res = CliRunner().invoke(
        app,
        ["eval", "agent", "--endpoint", "http://127.0.0.1:9/v1", "--temperature", "0.7", "--suite", str(small_suite),
         "--out", str(tmp_path / "x")],
    )  # fmt: skip
    assert isinstance(res.exception, UserError) and "harnessfit serve --temperature" in str(res.exception)
    assert not (tmp_path / "x" / "results.json").exists()  # refused before any episode or results file


@pytest.mark.slow  # serves the embedded model (about 40 s)
def test_several_seeds_of_a_served_model_are_sampled_and_the_results_say_so(pi_installed, small_suite, tmp_path):
    res = run_eval(
        "smollm2-135m",
        small_suite,
        tmp_path / "out",
        seeds=2,
        task_ids=["create_hello_script"],
        max_turns=1,
        max_tokens=16,
        sandbox=False,
        progress=False,
    )
    assert res.status == "success" and res.config["temperature"] == 0.7 and len(res.episodes) == 2
    assert "seeds 2 (sampled at temperature 0.7)" in (tmp_path / "out" / "results.md").read_text()
