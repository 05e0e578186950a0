"""The in-harness before/after of a GRPO run, as for SFT: with ``eval_suite`` set, ``train_grpo`` serves the starting
policy and the GRPO adapter (``harnessfit serve``, built-in engine) and runs the suite through the real Pi CLI for
each, then writes ``eval/before_after.md`` (``eval compare``), which the GRPO report and the HTML report show.
A tiny random Llama over the embedded tokenizer keeps it to one step and one one-turn task per side."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from grpo_fixtures import tiny_grpo_setup, tiny_recipe

from harnessfit.demo.pipeline import examples_dir
from harnessfit.train.config import load_grpo_config
from harnessfit.train.grpo import train_grpo

pytestmark = [pytest.mark.slow, pytest.mark.pi]


def test_grpo_in_harness_before_after_through_real_pi(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(examples_dir() / "tasks" / "default" / "create_hello_script", suite / "create_hello_script")
    audit = tiny_grpo_setup(tmp_path / "setup")
    cfg = load_grpo_config(
        None,
        **tiny_recipe(
            audit,
            max_steps=1,
            save_steps=1,
            heldout=False,
            eval_suite=str(suite),
            eval_max_turns=1,
            eval_max_seconds=60,
        ),
    )
    res = train_grpo(cfg, tmp_path / "run" / "grpo")
    assert res.status == "completed" and res.in_harness_table == res.out_dir / "eval" / "before_after.md"
    before, after = (json.loads((res.out_dir / "eval" / s / "results.json").read_text()) for s in ("before", "after"))
    for r in (before, after):
        assert r["status"] == "success" and r["pi_version"]
        assert [e["facts"]["task_id"] for e in r["episodes"]] == ["create_hello_script"]
    # each side ran Pi for real: its session file and event stream are there
    for side in ("before", "after"):
        ep = res.out_dir / "eval" / side / "episodes" / "create_hello_script" / "seed-0"
        assert (ep / "events.jsonl").stat().st_size > 0
    table = res.in_harness_table.read_text()  # one column per side, named by its results folder
    assert "(before)" in table and "(after)" in table and "Complete loop" in table
    report = res.report_path.read_text()
    assert "## In the real harness: before / after" in report and "(after)" in report

    from harnessfit.report.build import build_report

    build_report(tmp_path / "run", tmp_path / "report", workers=1)
    page = (tmp_path / "report" / "index.html").read_text()
    assert "In the real harness: before / after" in page[page.index('id="grpo"') :]
