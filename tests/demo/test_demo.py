"""The README's main job, end to end on a small plan: real Pi, real tokenizer, real trainer, real server."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
import yaml

from harnessfit.demo.pipeline import DemoPlan, examples_dir, run_demo
from harnessfit.harness.versions import DEFAULT_PI_VERSION, harness_spec
from harnessfit.tasks import get_family
from harnessfit.tasks.generate import generate_tasks

pytestmark = [pytest.mark.slow, pytest.mark.pi]


def _suite(dst: Path, src: Path, names: list[str]) -> Path:
    for name in names:
        shutil.copytree(src / name, dst / name)
    return dst


def test_demo_runs_every_stage_and_writes_the_report(tmp_path: Path) -> None:
    ex = examples_dir()
    train_suite = _suite(
        tmp_path / "train-suite", ex / "tasks" / "train", ["edit_page_size", "create_is_even", "recover_off_by_one"]
    )
    eval_suite = _suite(tmp_path / "eval-suite", ex / "tasks" / "default", ["create_hello_script"])
    recipe = yaml.safe_load((ex / "recipes" / "smollm2-cpu-demo.yaml").read_text())
    recipe.update(max_steps=1, eval_steps=1, save_steps=1, max_eval_records=1, max_train_records=2)
    recipe_path = tmp_path / "recipe.yaml"
    recipe_path.write_text(yaml.safe_dump(recipe))

    generate_tasks([get_family("edit_default_argument")], tmp_path / "heldout", n=1, seed=0)
    plan = DemoPlan(
        out=tmp_path / "demo",
        traces=None,
        train_suite=train_suite,
        eval_suite=eval_suite,
        heldout_suite=tmp_path / "heldout",
        recipe=recipe_path,
        eval_max_turns=2,
        eval_max_seconds=60,
        serve_max_tokens=24,
        raw_prompts=1,
        raw_max_tokens=16,
        probe_samples=1,
        probe_max_tokens=16,
    )
    report = run_demo(plan)

    text = report.read_text()
    out = tmp_path / "demo"
    # every stage left its artifacts
    for rel in (
        f"harness/pi-{DEFAULT_PI_VERSION}.json",
        "dataset/manifest.json",
        "audit/audit.json",
        "train/adapter",
        "eval/base/results.json",
        "eval/tuned/results.json",
        "eval/before_after.md",
        "raw/svelte-components/compare.md",
        "raw/python-functions/compare.md",
        "probe/compare.md",
    ):
        assert (out / rel).exists(), rel
    assert "equals the committed card: **True**" in text
    # both models were also evaluated on the held-out family, and the report shows the metric split for both suites
    for name in ("base-heldout", "tuned-heldout"):
        res = orjson.loads((out / "eval" / name / "results.json").read_bytes())
        assert res["status"] == "success" and [e["facts"]["task_id"] for e in res["episodes"]] == [
            "edit_default_argument-0-0000"
        ]
    assert "Before / after on held-out task families" in text
    assert text.count("Final validation clean") == 2 and text.count("Turn cap hit") == 2
    assert "before / after" in text.lower()
    # the static measures ran for both models: both raw suites and the probes, all scored
    for rel in ("raw/svelte-components", "raw/python-functions", "probe"):
        for name in ("base", "tuned"):
            res = orjson.loads((out / rel / name / "results.json").read_bytes())
            assert res["status"] == "success" and res["aggregates"]["unscored"] == 0, (rel, name)
    assert "Fully clean (shape + compile + policy)" in text and "Turns with a tool call" in text
    # the HTML report shows every stage, with a page per eval episode
    index = (out / "report" / "index.html").read_text()
    for key in ("run", "harness", "synth", "dataset", "audit", "train", "eval", "raw", "probe"):
        assert f'<section class="stage" id="{key}">' in index, key
    assert (out / "report" / "episodes" / "base" / "create_hello_script" / "seed-0.html").is_file()
    # the eval ran the real Pi on the held-out suite for both models
    for name in ("base", "tuned"):
        res = orjson.loads((out / "eval" / name / "results.json").read_bytes())
        assert res["status"] == "success"
        assert [e["facts"]["task_id"] for e in res["episodes"]] == ["create_hello_script"]
        episode = res["episodes"][0]
        assert episode["facts"]["status"] == "success", episode["facts"].get("error")
        assert episode["metrics"]["turns"] >= 1  # the model answered through Pi at least once
    # every stage ran for, and recorded, the default harness (the newest committed card)
    target = harness_spec(DEFAULT_PI_VERSION)
    assert orjson.loads((out / "dataset" / "manifest.json").read_bytes())["harness"] == target
    assert orjson.loads((out / "audit" / "tokenized" / "meta.json").read_bytes())["harness"] == target
    assert orjson.loads((out / "train" / "adapter" / "harnessfit_adapter.json").read_bytes())["harness"] == target
    for name in ("base", "tuned"):
        assert orjson.loads((out / "eval" / name / "results.json").read_bytes())["harness"] == target
        assert orjson.loads((out / "probe" / name / "results.json").read_bytes())["harness"] == target
    # training read the synthesised Pi sessions and evaluated before and after
    train = orjson.loads((out / "train" / "result.json").read_bytes())
    assert train["global_step"] == 1
    assert train["initial_val_loss"] is not None and train["final_val_loss"] is not None
