"""GRPO on a user's build (../shared/traces): the held-out split is chosen from what the build holds and said, the
sources' fix is named, and the CPU recipe runs end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "traces"


@pytest.fixture(scope="module")
def shared_build(tmp_path_factory) -> Path:
    from harnessfit.dataset.build import build_dataset
    from harnessfit.dataset.config import config_from_values

    root = tmp_path_factory.mktemp("grpo-user")
    build_dataset(config_from_values(inputs=[str(TRACES)], parquet=False), root, out=root / "ds")
    return root / "ds"


def test_heldout_split_is_chosen_from_what_the_build_holds(shared_build: Path) -> None:
    from harnessfit.errors import UserError
    from harnessfit.models import load_tokenizer
    from harnessfit.train.grpo_data import load_decision_points, load_heldout_points

    tok = load_tokenizer("embedded")
    points, note = load_heldout_points(shared_build, "auto", tok, sources=["openhands"])
    assert points is not None and points.name == "validation" and "split 'validation'" in note
    points, note = load_heldout_points(shared_build, "auto", tok, sources=["codex"])
    assert points is not None and points.name == "test"
    assert "validation.jsonl" in note and "it holds" in note  # the skipped candidate is said, with what it holds
    points, note = load_heldout_points(shared_build, "auto", tok, sources=["no-such-format"])
    assert points is None and note.endswith("training without the held-out before/after")
    with pytest.raises(UserError, match="set sources to some of them"):
        load_decision_points(shared_build, "validation", tok, sources=["pi"])


def test_fidelity_selects_the_decision_points_of_a_tier(shared_build: Path) -> None:
    """The build is at tier content (the default): every point says its tier; GRPO at fidelity byte skips the points
    whose state holds an altered result, naming the alterations, and uses the rest."""
    import orjson

    from harnessfit.models import load_tokenizer
    from harnessfit.train.grpo_data import DPSkip, load_decision_points

    tok = load_tokenizer("embedded")
    rows = [
        orjson.loads(line)
        for split in ("train", "validation", "test")
        for line in (shared_build / "decision_points" / f"{split}.jsonl").read_bytes().splitlines()
    ]
    assert {r["fidelity"] for r in rows} == {"byte", "content"}
    split = next(
        s for s in ("train", "validation", "test") if any(r["split"] == s and r["fidelity"] == "content" for r in rows)
    )
    every = load_decision_points(shared_build, split, tok)
    byte = load_decision_points(shared_build, split, tok, fidelity="byte")
    content = [r for r in rows if r["split"] == split and r["fidelity"] == "content"]
    skipped = [s for s in byte.skipped if s.reason == DPSkip.fidelity_not_selected]
    assert len(skipped) == len(content) > 0 and len(byte.dataset()) == len(every.dataset()) - len(content)
    assert all("claude_code.bash_" in s.detail or "openhands.output_stripped" in s.detail for s in skipped)


@pytest.mark.slow
def test_cpu_recipe_runs_on_a_build_of_the_shared_traces(shared_build: Path, tmp_path: Path) -> None:
    from harnessfit.tokens import audit

    audit(shared_build, "embedded", tmp_path / "audit", progress=False)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harnessfit.cli",
            "train",
            "grpo",
            str(REPO / "examples" / "recipes" / "grpo-cpu.yaml"),
            "--audit-dir",
            str(tmp_path / "audit"),
            "--out",
            str(tmp_path / "grpo"),
            "--max_steps",
            "1",
            "--heldout_max_records",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    err = proc.stderr
    assert "grpo: train:" in err and "from sources pi" in err
    assert "held-out" in err  # which held-out split was used, or that none could be
    assert (tmp_path / "grpo" / "adapter" / "adapter_config.json").is_file()
