"""A real tiny ``train rl`` run: 1 step, 2 episodes of one task, a 2-turn cap, the embedded model served from the
process, the real Pi in the sandbox. The metrics, episode and capture files exist, and every segment's loss mask
covers exactly the sampled ids of the captured turns (never a re-tokenisation)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from harnessfit.serve.capture import training_trace
from harnessfit.train.rl.episodes import link_segments, turns_of

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.pi
def test_one_step_two_episodes_end_to_end(tmp_path: Path) -> None:
    from harnessfit.train.config import load_config
    from harnessfit.train.rl.config import HarnessfitRLConfig
    from harnessfit.train.rl.loop import train_rl

    suite = tmp_path / "suite"
    shutil.copytree(REPO / "examples" / "tasks" / "default" / "edit_constant", suite / "edit_constant")
    out = tmp_path / "run"
    cfg = load_config(
        HarnessfitRLConfig,
        None,
        [],
        output_dir=str(out / "checkpoints"),
        suite=str(suite),
        max_steps=1,
        tasks_per_step=1,
        num_generations=2,
        episode_max_turns=2,
        max_completion_length=24,
        workers=2,
        episode_max_seconds=400.0,
        guard='{"enabled": false}',
    )
    res = train_rl(cfg, out, progress=False)
    assert res.status == "completed" and res.steps == 1 and (out / "adapter" / "adapter_config.json").is_file()

    (step,) = [orjson.loads(x) for x in (out / "metrics.jsonl").read_bytes().splitlines()]
    assert step["step"] == 1 and step["episodes"] == 2 and step["groups"] == 1
    episodes = [orjson.loads(x) for x in (out / "episodes.jsonl").read_bytes().splitlines()]
    assert sorted(e["group_index"] for e in episodes) == [0, 1]
    for e in episodes:
        assert set(e["components"]) == set(cfg.rewards)  # every component logged, None or not
        assert (out / e["episode_dir"] / "events.jsonl").is_file()
    assert any((out / "tb").iterdir()) and (out / "state" / "state.json").is_file()
    assert "| 1 |" in (out / "rl_report.md").read_text()

    captured = [e for e in episodes if e["turns"]]
    assert captured, "no episode reached the model"
    for e in captured:
        trace = training_trace(out / "capture", e["key"])
        turns = turns_of(trace)
        assert len(turns) == e["turns"] <= cfg.episode_max_turns
        segments = link_segments(turns)
        sampled = [tok for seg in segments for tok, m in zip(seg.ids, seg.mask, strict=True) if m]
        assert sampled == [tok for t in turns if t.rewarded for tok in t.completion]
        assert sum(s.sampled for s in segments) == e["sampled_tokens"]
        for raw in trace["turns"]:  # the capture's own mask: 0 on the prompt, 1 on each sampled id
            assert raw["loss_mask"] == [0] * len(raw["prompt_token_ids"]) + [1] * len(raw["completion_token_ids"])
