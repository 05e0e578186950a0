"""Two CPU processes through `accelerate launch` (gloo): both ranks train, stay in sync, and match one process.

Tolerance: the same records form each optimizer step in both runs (grad-accum is divided by the process count and
the loss is normalised by the tokens of all ranks), so losses agree to float summation order: 1e-3 relative."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.xdist_group("accelerate")
def test_two_process_run_trains_and_matches_one_process(tiny_audit, tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        yaml.safe_dump(
            dict(
                audit_dir=str(tiny_audit),
                lora_r=8,
                lora_alpha=16,
                lora_dropout=0.0,
                learning_rate=2e-2,
                gradient_accumulation_steps=4,
                max_steps=6,
                eval_steps=6,
                save_steps=6,
                threads=1,
                guard=dict(enabled=False),
            )
        )
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    two = subprocess.run(
        [
            str(BIN / "accelerate"),
            "launch",
            "--config_file",
            str(REPO / "examples" / "accelerate" / "cpu-2proc.yaml"),
            "-m",
            "harnessfit.cli",
            "train",
            "sft",
            str(recipe),
            "--out",
            str(tmp_path / "two"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert two.returncode == 0, two.stderr[-3000:]
    one = subprocess.run(
        [str(BIN / "harnessfit"), "train", "sft", str(recipe), "--out", str(tmp_path / "one")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert one.returncode == 0, one.stderr[-3000:]

    ranks = [json.loads((tmp_path / "two" / "ranks" / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world_size"] for r in ranks] == [2, 2]
    assert all(r["global_step"] == 6 and r["micro_batches"] == 12 for r in ranks)  # 6 steps x grad-accum 2 each
    assert ranks[0]["adapter_sha256"] == ranks[1]["adapter_sha256"]  # DDP kept the replicas identical
    solo = json.loads((tmp_path / "one" / "ranks" / "rank0.json").read_text())
    assert solo["micro_batches"] == 24  # one process does all 4 micro-batches per step

    r1 = json.loads((tmp_path / "one" / "result.json").read_text())
    r2 = json.loads((tmp_path / "two" / "result.json").read_text())
    assert r2["final_val_loss"] < r2["initial_val_loss"]
    assert r2["final_val_loss"] == pytest.approx(r1["final_val_loss"], rel=1e-3)

    def losses(run):
        rows = [json.loads(x) for x in (tmp_path / run / "metrics.jsonl").read_text().splitlines()]
        return [r["loss"] for r in rows if "loss" in r]

    assert losses("two") == pytest.approx(losses("one"), rel=1e-3)
