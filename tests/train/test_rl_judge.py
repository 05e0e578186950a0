"""train rl's optional LLM judge over the whole episode, against a scripted OpenAI-compatible endpoint: the verdict
becomes the ``judge`` component, a broken reply or a dead judge is None (the episode leaves its group only when the
judge is weighted), and the transcript is the eval's record of the episode — the task, the turns, the tool results
and the final answer, verbatim (no escaping). No model, no Pi."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from _helpers.episodes import recorded_episode
from harnessfit.eval.task import load_task
from harnessfit.harness.scripted import Reply, ScriptedEndpoint
from harnessfit.train.rl.config import HarnessfitRLConfig
from harnessfit.train.rl.judge import EPISODE_RUBRIC, episode_transcript, judge_client, judge_episode
from harnessfit.train.rl.rewards import DEFAULT_RL_WEIGHTS, check_weights, episode_reward
from harnessfit.train.rl.rollout import Rollout, RolloutSettings, _judge

FINAL = 'Fixed: greet() now returns "Hello, world" & check_greet.py prints OK <done>.'


def _assistant(calls=(), text=None, stop="toolUse"):
    content = ([{"type": "text", "text": text}] if text else []) + [
        {"type": "toolCall", "id": cid, "name": name, "arguments": args} for cid, name, args in calls
    ]
    return {"role": "assistant", "content": content, "stopReason": stop, "usage": {"input": 1, "output": 1}}


def _result(cid, name, text, is_error=False):
    content = [{"type": "text", "text": text}]
    return {"role": "toolResult", "toolCallId": cid, "toolName": name, "content": content, "isError": is_error}


def _messages(prompt: str) -> list[dict]:
    return [
        {"role": "user", "content": [{"type": "text", "text": prompt}]},
        _assistant([("c1", "read", {"path": "greet.py"})], text="<tool_call> looks & see"),
        _result("c1", "read", 'def greet():\n    return "Helo" if a < b else ""'),
        _assistant([("c2", "bash", {"command": "python3 check_greet.py"})]),
        _result("c2", "bash", "FAIL\n\nCommand exited with code 1", True),
        _assistant(text=FINAL, stop="stop"),
    ]


def _episode(tmp_path: Path, default_suite: Path):
    """A finished episode's record as the runner leaves it (a session file; no event stream)."""
    task = load_task(default_suite / "edit_greeting")
    facts = recorded_episode(tmp_path, task.id, _messages(task.prompt), expected_change=True, checker_exit_code=0)
    return task, facts


def _settings(ep: ScriptedEndpoint, weights: dict[str, float]) -> RolloutSettings:
    client = judge_client({"base_url": ep.base_url, "model": "judge", "api_key_env": None, "retries": 0})
    tools = [{"function": {"name": n}} for n in ("read", "bash", "edit", "write")]
    return RolloutSettings("pi", None, weights, None, tools, 8, 60.0, 1, judge=client)


def _metrics(**kw):
    base = {"checker_passed": True, "complete_loop": True, "turn_cap_hit": False, "runaway": False}
    return SimpleNamespace(**{**base, "timed_out": False, "integrity_flag": None, **kw})


def test_the_judge_reads_the_recorded_episode_verbatim_and_its_verdict_is_the_component(
    tmp_path: Path, default_suite: Path
) -> None:
    task, facts = _episode(tmp_path, default_suite)
    weights = {"checker_passed": 1.0, "judge": 1.0}
    with ScriptedEndpoint([Reply(text='{"score": 6, "critique": "never saw the check pass"}')]) as ep:
        verdict = _judge(facts, task, tmp_path, _settings(ep, weights))
        (sent,) = ep.requests
    assert verdict.score == 0.6 and verdict.critique == "never saw the check pass"
    system, user = sent["messages"]
    assert system["content"] == EPISODE_RUBRIC and sent["model"] == "judge"
    text = user["content"]
    assert text.startswith("Tools available to the agent: read, bash, edit, write")
    assert text.count(task.prompt) == 1  # the task once, not again as the first user turn
    assert "<tool_call> looks & see" in text  # the agent's words verbatim: nothing HTML-escaped
    assert '[tool call] read {"path": "greet.py"}' in text and "python3 check_greet.py" in text
    assert 'return "Helo" if a < b else ""' in text and "### tool result (bash, error)" in text
    assert "&amp;" not in text and "&lt;" not in text and "\\u" not in text
    assert text.endswith(f"## Final answer\n{FINAL}")
    assert "the agent stopped with a final answer" in text
    reward = episode_reward(facts, _metrics(), {"judge": verdict.score}, weights)
    assert reward.reward == pytest.approx((1.0 + 0.6) / 2) and reward.components["judge"] == 0.6


def test_a_broken_or_missing_verdict_is_none_never_zero(tmp_path: Path, default_suite: Path) -> None:
    task, facts = _episode(tmp_path, default_suite)
    weights = {"checker_passed": 1.0, "judge": 1.0}
    with ScriptedEndpoint([Reply(text="I would rather not grade this."), Reply(text='{"score": 42}')]) as ep:
        settings = _settings(ep, weights)
        broken = _judge(facts, task, tmp_path, settings)
        out_of_range = _judge(facts, task, tmp_path, settings)
    assert broken.score is None and broken.reason == "no_verdict"
    assert out_of_range.score is None and out_of_range.reason == "score_out_of_range"
    dead = judge_client({"base_url": "http://127.0.0.1:9/v1", "model": "j", "api_key_env": None, "retries": 0})
    unreachable = judge_episode(dead, task.prompt, _messages(task.prompt), facts, ["read"])
    assert unreachable.score is None and unreachable.reason.startswith("endpoint_error")
    # weighted: the episode is unscored (it leaves its group), with the judge's reason — never a 0
    r = episode_reward(facts, _metrics(), {"judge": None}, weights, {"judge": broken.reason})
    assert r.reward is None and r.unscored == "judge is unscorable: no_verdict" and r.components["judge"] is None
    # not weighted: the judge is no component at all
    r = episode_reward(facts, _metrics(), {"judge": None}, {"checker_passed": 1.0})
    assert r.reward == 1.0 and "judge" not in r.components
    ro = Rollout(1, task.id, 0, "k", "ep", facts, _metrics(), judge=broken)
    assert ro.row()["judge_reason"] == "no_verdict"


def test_the_transcript_names_an_episode_without_a_final_answer_and_cuts_early_turns() -> None:
    msgs = [{"role": "user", "content": "do it"}] + [
        m
        for i in range(30)
        for m in (_assistant([(f"c{i}", "bash", {"command": f"ls {i}"})]), _result(f"c{i}", "bash", "x" * 5000))
    ]
    text = episode_transcript("do it", msgs, SimpleNamespace(turn_cap_hit=True, killed=None), context_chars=3000)
    assert "[... earlier turns cut ...]" in text and "ls 29" in text and '"ls 0"' not in text and '"ls 29"' in text
    assert "more characters cut" in text and text.startswith("## Task\ndo it\n")
    assert "stopped by the turn cap" in text and text.endswith("## Final answer\n(none)")


def test_the_judge_is_off_by_default_and_needs_an_endpoint_when_weighted() -> None:
    assert "judge" not in DEFAULT_RL_WEIGHTS and check_weights({"judge": 1.0}) == {"judge": 1.0}
    cfg = HarnessfitRLConfig(output_dir="/tmp/unused", suite="s")
    assert "judge" not in cfg.rewards and cfg.judge["base_url"] is None
    with pytest.raises(ValueError, match=r"judge\.base_url / judge\.model are unset"):
        HarnessfitRLConfig(output_dir="/tmp/unused", rewards={"checker_passed": 1.0, "judge": 0.5})
    with pytest.raises(ValueError, match="judge"):
        HarnessfitRLConfig(output_dir="/tmp/unused", judge={"base_url": "http://h/v1", "colour": "red"})
    cfg = HarnessfitRLConfig(
        output_dir="/tmp/unused",
        rewards={"checker_passed": 1.0, "judge": 0.5},
        judge={"base_url": "http://h/v1", "model": "m", "timeout_s": 5},
    )
    assert cfg.judge["timeout_s"] == 5.0 and cfg.rewards["judge"] == 0.5
