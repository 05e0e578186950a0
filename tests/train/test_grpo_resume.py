"""`kill -9` in the middle of `harnessfit train grpo`, then `--resume`: the run continues from the newest complete
checkpoint, and metrics and completions hold each step once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from grpo_fixtures import tiny_grpo_setup, tiny_recipe

BIN = Path(sys.executable).parent / "harnessfit"


@pytest.mark.slow
def test_kill_9_then_resume_continues(tmp_path) -> None:
    audit = tiny_grpo_setup(tmp_path / "setup")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        yaml.safe_dump(
            tiny_recipe(
                audit,
                max_steps=10,
                save_steps=2,
                save_total_limit=20,
                heldout=False,
                rewards={"format": 1.0, "reference_match": 1.0},
            )
        )
    )
    run = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [str(BIN), "train", "grpo", str(recipe), "--out", str(run)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if (run / "checkpoints" / "checkpoint-4" / "trainer_state.json").is_file():
                break
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # only what this test started
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, f"run ended before the kill: {proc.stderr.read()[-2000:]!r}"
    assert not (run / "adapter").exists()
    cut = max(
        int(p.name.split("-")[1])
        for p in (run / "checkpoints").glob("checkpoint-*")
        if (p / "trainer_state.json").is_file()
    )
    assert 4 <= cut < 10

    res = subprocess.run(
        [str(BIN), "train", "grpo", str(recipe), "--out", str(run), "--resume"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    result = json.loads((run / "result.json").read_text())
    assert result["global_step"] == 10 and result["resumed_from"].endswith(f"checkpoint-{cut}")
    assert (run / "adapter" / "adapter_model.safetensors").is_file()
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert sorted(r["step"] for r in rows if "reward" in r) == list(range(1, 11))  # each step once, none missing
    per_step = Counter(json.loads(x)["step"] for x in (run / "completions.jsonl").read_text().splitlines())
    assert per_step == {s: 2 for s in range(1, 11)}  # one group of 2 per step, the cut steps logged once
    assert "10 steps" in (run / "grpo_report.md").read_text()
