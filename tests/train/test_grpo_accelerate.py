"""`harnessfit train grpo` under `accelerate launch` with two CPU processes (gloo): both ranks train the same steps,
their adapters stay identical, and every completion is logged once (each rank its own file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from grpo_fixtures import tiny_grpo_setup, tiny_recipe

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.xdist_group("accelerate")
def test_two_process_grpo(tmp_path) -> None:
    audit = tiny_grpo_setup(tmp_path / "setup")
    recipe = tmp_path / "r.yaml"
    # 2 completions per process per step: one group of 2 split across the two ranks
    recipe.write_text(
        yaml.safe_dump(
            tiny_recipe(
                audit,
                max_steps=3,
                per_device_train_batch_size=1,
                heldout=False,
                rewards={"format": 1.0, "reference_match": 1.0},
            )
        )
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run(
        [
            str(BIN / "accelerate"),
            "launch",
            "--config_file",
            str(REPO / "examples" / "accelerate" / "cpu-2proc.yaml"),
            "-m",
            "harnessfit.cli",
            "train",
            "grpo",
            str(recipe),
            "--out",
            str(tmp_path / "run"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = tmp_path / "run"
    ranks = [json.loads((out / "ranks" / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world_size"] for r in ranks] == [2, 2] and all(r["global_step"] == 3 for r in ranks)
    assert ranks[0]["adapter_sha256"] == ranks[1]["adapter_sha256"]
    rows = {
        r: [json.loads(x) for x in (out / name).read_text().splitlines()]
        for r, name in ((0, "completions.jsonl"), (1, "completions.rank1.jsonl"))
    }
    assert Counter(x["step"] for x in rows[0]) == Counter(x["step"] for x in rows[1]) == {1: 1, 2: 1, 3: 1}
    # the two ranks hold the two halves of one group per step: same decision point, indices 0 and 1
    for a, b in zip(rows[0], rows[1], strict=True):
        assert (a["group"], a["index"], b["group"], b["index"]) == (0, 0, 0, 1) and a["dp_id"] == b["dp_id"]
    assert "3 steps, 6 completions" in (out / "grpo_report.md").read_text()
