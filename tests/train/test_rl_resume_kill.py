"""``harnessfit train rl`` killed with SIGKILL once step 1's state is saved, then run again with ``--resume``: it
continues after step 1 and ends at step 2 without redoing step 1 — the logs hold steps 1 and 2 once each, and step
1's rows are the ones the killed run wrote. A real run: the embedded model served from the process, the real Pi in
the sandbox (1 task, 2 episodes a step, a 1-turn cap)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

import harnessfit

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent / "harnessfit"


def _rows(path: Path) -> list[dict]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


@pytest.mark.slow
@pytest.mark.pi
def test_kill_9_after_step_1_then_resume_ends_at_step_2_without_redoing_step_1(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(REPO / "examples" / "tasks" / "default" / "edit_constant", suite / "edit_constant")
    run = tmp_path / "run"
    cmd = [str(BIN), "train", "rl", "--suite", str(suite), "--out", str(run)]
    cmd += ["--max_steps", "2", "--tasks_per_step", "1", "--num_generations", "2", "--episode_max_turns", "1"]
    cmd += ["--max_completion_length", "32", "--workers", "2", "--episode_max_seconds", "400"]
    cmd += ["--guard", '{"enabled": false}']
    # the subprocess imports this checkout's harnessfit, as the test does
    env = {**os.environ, "PYTHONPATH": str(Path(harnessfit.__file__).resolve().parents[1])}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    state = run / "state" / "state.json"
    deadline = time.monotonic() + 1200
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if state.is_file() and orjson.loads(state.read_bytes()).get("step") == 1:
                break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the run, its engine and its Pi episodes: only what this test started
        _, err = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, f"run ended before the kill: {err.decode()[-3000:]!r}"
    assert orjson.loads(state.read_bytes())["step"] == 1
    assert not (run / "run.json").exists() and not (run / "adapter").exists()
    killed_metrics = _rows(run / "metrics.jsonl")
    assert [r["step"] for r in killed_metrics] in ([1], [1, 2])  # step 2 may have logged before its state was saved
    step1 = killed_metrics[0]
    step1_episodes = [e for e in _rows(run / "episodes.jsonl") if e["step"] == 1]

    res = subprocess.run(cmd + ["--resume"], env=env, capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "resuming after step 1" in res.stderr
    metrics = _rows(run / "metrics.jsonl")
    assert [r["step"] for r in metrics] == [1, 2]  # each once: step 1 not redone, a half-logged step 2 cut
    assert metrics[0] == step1  # the killed run's own row (its seconds and loss), not a rerun's
    episodes = _rows(run / "episodes.jsonl")
    assert [e for e in episodes if e["step"] == 1] == step1_episodes
    assert sorted(e["step"] for e in episodes) == [1, 1, 2, 2]
    done = orjson.loads((run / "run.json").read_bytes())
    assert done["status"] == "completed" and done["steps"] == 2
    assert orjson.loads(state.read_bytes())["step"] == 2 and (run / "adapter" / "adapter_config.json").is_file()
    assert "| 2 |" in (run / "rl_report.md").read_text()
