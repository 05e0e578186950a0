"""``harnessfit eval rescore``: a finished run's episodes scored again from what they recorded, the aggregates
recomputed, the results rewritten, and the changed rates said."""

from __future__ import annotations

import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.errors import UserError
from harnessfit.eval.results import load_results
from harnessfit.eval.run import run_eval


@pytest.mark.slow
@pytest.mark.pi
def test_a_run_scored_with_other_scorers_gets_the_current_ones_back(pi_installed, small_suite, tmp_path) -> None:
    out = tmp_path / "run"
    results = run_eval("scripted:golden", small_suite, out, seeds=1, workers=2, progress=False)
    n = len(results.episodes)
    assert results.aggregates["rates"]["finished_with_response"]["successes"] == n
    # as if an older scorer had judged every answer missing and counted a phantom call
    raw = orjson.loads((out / "results.json").read_bytes())
    for ep in raw["episodes"]:
        ep["metrics"]["finished_with_response"] = False
        ep["metrics"]["complete_loop"] = False
        ep["metrics"]["tool_calls_total"] += 1
    raw["aggregates"]["rates"]["finished_with_response"]["successes"] = 0
    raw["aggregates"]["rates"]["complete_loop"]["successes"] = 0
    calls = results.aggregates["tool_calls"]["total"]
    raw["aggregates"]["tool_calls"]["total"] = calls + n
    (out / "results.json").write_bytes(orjson.dumps(raw))
    res = CliRunner().invoke(app, ["eval", "rescore", str(out)])
    assert res.exit_code == 0, res.output
    assert f"finished_with_response: 0/{n} -> {n}/{n}" in res.output
    assert f"complete_loop: 0/{n} -> {n}/{n}" in res.output
    assert f"tool calls total: {calls + n} -> {calls}" in res.output
    again = load_results(out)
    assert again.aggregates["rates"]["complete_loop"]["successes"] == n
    assert all(ep.metrics.complete_loop and ep.metrics.tool_calls_total >= 1 for ep in again.episodes)
    assert "| Complete loop" in (out / "results.md").read_text()
    res = CliRunner().invoke(app, ["eval", "rescore", str(out)])
    assert res.exit_code == 0 and "no aggregate changed" in res.output
    missing = CliRunner().invoke(app, ["eval", "rescore", str(out), "--suite", str(tmp_path / "nowhere")])
    assert isinstance(missing.exception, UserError)  # one line from the CLI's entry point, no traceback
    assert "the suite this run used is not there" in str(missing.exception)
