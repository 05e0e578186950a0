"""`kill -9` mid-run, then `--resume`: training continues from the newest complete checkpoint at the right step,
and the loss curve after the cut equals an uninterrupted run's (optimizer, scheduler, RNG, data position restored)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from harnessfit.train.config import load_sft_config
from harnessfit.train.sft import train_sft

BIN = Path(sys.executable).parent / "harnessfit"


def _losses(run: Path) -> dict[int, float]:
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in rows if "loss" in r}


@pytest.mark.slow
def test_kill_9_then_resume_continues_the_curve(tiny_audit, tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        yaml.safe_dump(
            dict(
                audit_dir=str(tiny_audit),
                lora_r=8,
                lora_alpha=16,
                lora_dropout=0.0,
                learning_rate=1e-2,
                gradient_accumulation_steps=2,
                num_train_epochs=10,
                max_steps=24,
                eval_steps=4,
                save_steps=4,
                save_total_limit=50,
                threads=1,
                guard=dict(interval_s=0.5, min_free_disk_gib=0.1, min_host_mem_gib=0.1),
            )
        )
    )
    run = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [str(BIN), "train", "sft", str(recipe), "--out", str(run)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if (run / "checkpoints" / "checkpoint-8" / "trainer_state.json").is_file():
                break
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the trainer and its guard: only what this test started
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, f"run ended before the kill: {proc.stderr.read()[-2000:]!r}"
    assert not (run / "adapter").exists()

    cut = max(
        int(p.name.split("-")[1])
        for p in (run / "checkpoints").glob("checkpoint-*")
        if (p / "trainer_state.json").is_file()
    )
    assert 8 <= cut < 24
    res = subprocess.run(
        [str(BIN), "train", "sft", str(recipe), "--out", str(run), "--resume"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    result = json.loads((run / "result.json").read_text())
    assert result["global_step"] == 24 and result["resumed_from"].endswith(f"checkpoint-{cut}")

    resumed = _losses(run)
    assert sorted(resumed) == list(range(1, 25))  # one curve: no duplicated or missing steps

    # the same recipe without interruption gives the same losses after the cut
    ref = _losses(train_sft(load_sft_config(recipe), tmp_path / "ref").out_dir)
    for step in range(cut + 1, 25):
        assert resumed[step] == pytest.approx(ref[step], rel=1e-4), step
