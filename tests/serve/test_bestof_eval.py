"""`eval agent --best-of N` serves the model through `harnessfit serve --best-of N --verifier card` and runs the suite
in the real Pi CLI; the eval reports the valid-call rate of one sample vs N on the same model requests (results.json
aggregates, results.md, bestof.json, the command's output). A tiny random Llama over the embedded tokenizer keeps
it to one one-turn episode."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.demo.pipeline import examples_dir

pytestmark = [pytest.mark.slow, pytest.mark.pi]


def test_eval_agent_best_of_reports_valid_calls_for_one_and_n(tmp_path: Path) -> None:
    from train.grpo_fixtures import make_tiny_chat_model

    model = make_tiny_chat_model(tmp_path / "model")
    suite = tmp_path / "suite"
    shutil.copytree(examples_dir() / "tasks" / "default" / "create_hello_script", suite / "create_hello_script")
    out = tmp_path / "eval"
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "agent",
            "--model",
            str(model),
            "--suite",
            str(suite),
            "--out",
            str(out),
            "--max-turns",
            "1",
            "--max-seconds",
            "90",
            "--max-tokens",
            "12",
            "--best-of",
            "3",
        ],
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in (out / "bestof.jsonl").read_text().splitlines()]
    summary = json.loads((out / "bestof.json").read_text())
    assert rows and summary["n"] == 3 and summary["requests"] == len(rows)
    assert all(1 <= r["tried"] <= 3 and len(r["scores"]) == r["tried"] for r in rows)
    for r in rows:  # a candidate is drawn again only when the ones before failed; the first passing one is chosen
        assert r["chosen"] == r["tried"] - 1 if r["any_passes"] else r["tried"] == 3
    assert summary["valid_first_sample"] == sum(r["first_passes"] for r in rows) / len(rows)
    assert summary["valid_best_of_n"] >= summary["valid_first_sample"]
    results = json.loads((out / "results.json").read_text())
    assert results["aggregates"]["best_of"] == summary and results["status"] == "success"
    md = (out / "results.md").read_text()
    assert "## Best-of-N at serving" in md and f"| {len(rows)} |" in md
    assert "valid-call rate over" in res.output and "best of 3" in res.output
