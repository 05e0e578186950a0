"""Synthesis at scale: held-out families refused, a killed run resumed, data chosen from an eval run's failures."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.errors import UserError
from harnessfit.eval import run_eval
from harnessfit.synth import synth
from harnessfit.synth.targeting import ANSWERS, choose_tasks, target_from_eval
from harnessfit.tasks import families_in, get_family
from harnessfit.tasks.generate import generate_tasks


def test_held_out_families_are_never_synthesised(tmp_path: Path) -> None:
    generate_tasks(
        [get_family("edit_constant"), get_family("fix_comparison")], tmp_path / "suite", n=1, seed=0, check=False
    )
    with pytest.raises(UserError, match="held-out families \\(fix_comparison\\)"):
        synth(tmp_path / "suite", tmp_path / "out", progress=False)
    assert not (tmp_path / "out" / "sessions").exists()
    # naming only the training family's task is allowed
    ids = [p.name for p in (tmp_path / "suite").iterdir() if p.name.startswith("edit_constant")]
    with pytest.raises(UserError, match="held-out"):
        synth(tmp_path / "suite", tmp_path / "out", task_ids=ids + ["fix_comparison-0-0000"], progress=False)


@pytest.mark.pi
@pytest.mark.slow
def test_a_killed_run_resumes_with_only_what_is_missing(pi_installed, tmp_path: Path) -> None:
    generate_tasks([get_family("edit_string"), get_family("recover_missing_file")], tmp_path / "suite", n=1, seed=4)
    first, second = sorted(p.name for p in (tmp_path / "suite").iterdir() if p.is_dir())
    out = tmp_path / "synth"
    synth(tmp_path / "suite", out, contrast=False, task_ids=[first], progress=False)  # a run that stopped early
    with pytest.raises(UserError, match="--resume"):
        synth(tmp_path / "suite", out, contrast=False, progress=False)
    with pytest.raises(UserError, match="other contrast"):
        synth(tmp_path / "suite", out, contrast=True, resume=True, progress=False)
    manifest = synth(tmp_path / "suite", out, contrast=False, resume=True, progress=False)
    assert sorted(f["task"] for f in manifest["files"]) == [first, second]
    assert {f["family"] for f in manifest["files"]} == {"edit_string", "recover_missing_file"}
    parts = sorted((out / "runs" / "golden").glob("part-*"))
    ran = [[e["facts"]["task_id"] for e in orjson.loads((p / "results.json").read_bytes())["episodes"]] for p in parts]
    assert ran == [[first], [second]]  # the resumed run ran only the missing task
    rows = [orjson.loads(x) for x in (out / "progress.jsonl").read_bytes().splitlines()]
    assert [(r["task"], r["kept"]) for r in rows] == [(first, True), (second, True)]


@pytest.mark.pi
@pytest.mark.slow
def test_from_eval_weights_families_toward_the_failures(pi_installed, tmp_path: Path) -> None:
    train = families_in("train")
    generate_tasks(train, tmp_path / "suite", n=2, seed=9, check=False)
    one = [p.name for p in sorted((tmp_path / "suite").iterdir()) if p.name.startswith("edit_constant")][:1]
    run_eval("scripted:never-stop", tmp_path / "suite", tmp_path / "eval", task_ids=one, max_turns=2, progress=False)
    targeting = target_from_eval(tmp_path / "eval", [f.name for f in train])
    assert targeting.failures.get("turn_cap") == 1
    finish = set(ANSWERS["turn_cap"][0])
    assert all(targeting.weights[f] > 1.0 for f in finish)
    assert all(
        targeting.weights[f] == 1.0
        for f in targeting.weights
        if f not in finish and not any(f in ANSWERS[k][0] for k in targeting.failures)
    )
    chosen = choose_tasks(tmp_path / "suite", targeting, 8)
    assert len(chosen) == 8
    # in proportion to the weights: a family with more weight never gets fewer tasks; the turn cap's families get at
    # least their even share (the episode's other failures raise other families too: never-stop also never validates)
    w, got = targeting.weights, targeting.chosen
    assert all(got.get(a, 0) >= got.get(b, 0) for a in w for b in w if w[a] > w[b])
    assert sum(got.get(f, 0) for f in finish) >= 8 * len(finish) / len(train)

    out = tmp_path / "synth"
    res = CliRunner().invoke(
        app,
        [
            "synth",
            "--suite",
            str(tmp_path / "suite"),
            "--out",
            str(out),
            "--from-eval",
            str(tmp_path / "eval"),
            "--limit",
            "3",
            "--no-contrast",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "turn_cap: 1 episode(s) → " in res.output and "tasks per family:" in res.output
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    notes = manifest["notes"]["targeting"]
    assert notes["failures"]["turn_cap"] == 1 and sum(notes["chosen"].values()) == 3 == len(manifest["files"])
    assert {f["family"] for f in manifest["files"]} <= set(notes["chosen"])
