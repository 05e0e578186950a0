"""train rl, fast parts: token-prefix linking and the loss mask, episode rewards with None leaving the group,
group advantages, resume state and the report (no model, no Pi)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest

from harnessfit.errors import UserError
from harnessfit.train.rl.episodes import link_segments, turns_of
from harnessfit.train.rl.report import write_rl_report
from harnessfit.train.rl.rewards import check_weights, episode_reward, group_advantages

W = {"checker_passed": 1.0, "complete_loop": 1.0, "format": 1.0, "turn_cap": 0.5, "runaway": 0.5}


def _turn(i: int, prompt: list[int], completion: list[int], complete: bool = True) -> dict:
    return {
        "node_id": f"ep:{i}",
        "prompt_token_ids": prompt,
        "completion_token_ids": completion,
        "per_token_logps": [-0.1 * (j + 1) for j in range(len(completion))],
        "metadata": {"complete": complete},
        "response": {"text": "x"},
    }


def test_turns_extending_the_prompt_share_a_segment_and_the_mask_covers_exactly_the_sampled_ids() -> None:
    t0 = _turn(0, [1, 2, 3], [10, 11])
    t1 = _turn(1, [1, 2, 3, 10, 11, 50, 51], [12])  # tool result 50 51 between the turns
    t2 = _turn(2, [9, 9], [13, 14])  # the template rewrote history: a new segment
    segs = link_segments(turns_of({"turns": [t0, t1, t2]}))
    assert [s.turns for s in segs] == [["ep:0", "ep:1"], ["ep:2"]]
    first = segs[0]
    assert first.ids == [1, 2, 3, 10, 11, 50, 51, 12] and first.prompt_len == 3
    assert first.mask == [0, 0, 0, 1, 1, 0, 0, 1]
    assert [i for i, m in zip(first.ids, first.mask, strict=True) if m] == [10, 11, 12]  # exactly the sampled ids
    assert [lp for lp, m in zip(first.old_logps, first.mask, strict=True) if m] == [-0.1, -0.2, -0.1]
    assert segs[1].mask == [0, 0, 1, 1] and sum(s.sampled for s in segs) == 5


def test_a_turn_pi_never_sent_on_is_not_rewarded() -> None:
    aborted = _turn(0, [1, 2], [10], complete=False)
    retried = _turn(1, [1, 2], [11, 12])
    retry = _turn(2, [1, 2], [13])  # same prompt again: turn 1 was replaced
    turns = turns_of({"turns": [aborted, retried, retry]})
    assert [t.rewarded for t in turns] == [False, False, True]
    segs = link_segments(turns)
    assert sum(s.sampled for s in segs) == 1 and segs[-1].mask == [0, 0, 1]


def test_a_broken_capture_is_refused() -> None:
    bad = _turn(0, [1], [10, 11])
    bad["per_token_logps"] = [-0.1]
    with pytest.raises(ValueError, match="broken capture"):
        turns_of({"turns": [bad]})


def _facts(**kw):
    base = {"status": "success", "error": None, "checker_exit_code": 0, "reward": None}
    return SimpleNamespace(**{**base, **kw})


def _metrics(**kw):
    base = {
        "checker_passed": True,
        "complete_loop": True,
        "turn_cap_hit": False,
        "runaway": False,
        "timed_out": False,
        "integrity_flag": None,
    }
    return SimpleNamespace(**{**base, **kw})


def test_episode_reward_weighs_scores_and_adds_penalties_and_logs_every_component() -> None:
    good = episode_reward(_facts(), _metrics(), {"format": 1.0}, W)
    assert good.reward == pytest.approx(1.0) and good.components == {
        "checker_passed": 1.0,
        "complete_loop": 1.0,
        "format": 1.0,
        "turn_cap": 0.0,
        "runaway": 0.0,
    }
    capped = episode_reward(
        _facts(), _metrics(checker_passed=False, complete_loop=False, turn_cap_hit=True), {"format": 0.5}, W
    )
    assert capped.reward == pytest.approx(0.5 / 3 - 0.5) and capped.unscored is None
    no_turn = episode_reward(_facts(), _metrics(checker_passed=False, complete_loop=False, timed_out=True), {}, W)
    assert no_turn.reward == pytest.approx(0.0 - 0.5)  # no turn to judge: left out of the mean, not None


@pytest.mark.parametrize(
    "facts, metrics, why",
    [
        (_facts(status="error", error="bwrap: setting up uid map"), None, "episode error"),
        (_facts(checker_exit_code=None), _metrics(), "checker never ran"),
        (_facts(), _metrics(integrity_flag="session_file_differs_from_events"), "integrity"),
    ],
)
def test_an_unscorable_episode_is_none_never_zero(facts, metrics, why) -> None:
    r = episode_reward(facts, metrics, {"format": 1.0}, W)
    assert r.reward is None and why in r.unscored and set(r.components) == set(W)
    assert all(v is None for v in r.components.values())
    assert episode_reward(_facts(), _metrics(), {"format": None}, W).reward is None  # an unscorable component


def test_none_leaves_the_group_and_a_group_needs_two_scored_episodes() -> None:
    adv = group_advantages([1.0, None, 0.0], scale="none")
    assert adv == [0.5, None, -0.5]
    assert group_advantages([1.0, None]) == [None, None]
    scaled = group_advantages([1.0, 0.0, 0.0, 1.0])
    assert scaled[0] == pytest.approx(0.5 / (0.57735 + 1e-4), rel=1e-4) and sum(scaled) == pytest.approx(0.0)
    assert group_advantages([0.3, 0.3]) == [0.0, 0.0]


def test_reward_weights_are_checked() -> None:
    assert check_weights(None)["checker_passed"] == 1.0
    with pytest.raises(ValueError, match="unknown RL reward component 'reference_match'"):
        check_weights({"reference_match": 1.0})  # a single-turn component: no reference turn in an episode
    with pytest.raises(ValueError, match="no score component"):
        check_weights({"turn_cap": 1.0})


def test_config_errors_are_one_line(tmp_path: Path) -> None:
    from harnessfit.train.config import load_config
    from harnessfit.train.rl.config import HarnessfitRLConfig

    cfg = load_config(HarnessfitRLConfig, None, ["--num_generations", "3"], output_dir=str(tmp_path))
    assert cfg.per_device_train_batch_size == 3 and cfg.bf16 is False and cfg.beta == 0.0
    with pytest.raises(UserError, match="num_generations=1"):
        load_config(HarnessfitRLConfig, None, ["--num_generations", "1"], output_dir=str(tmp_path))
    with pytest.raises(UserError, match="train rl --help"):
        load_config(HarnessfitRLConfig, None, [], output_dir=str(tmp_path), episode_max_turn=3)


def test_resume_state_refuses_a_fresh_start_and_trims_the_logs(tmp_path: Path) -> None:
    import torch

    from harnessfit.train.rl.state import refuse_or_resume, save_state

    class _Model:
        def save_pretrained(self, path: str, selected_adapters: list[str]) -> None:
            Path(path).mkdir(parents=True)
            (Path(path) / "adapter_config.json").write_text("{}")

    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], lr=0.1)
    assert refuse_or_resume(tmp_path, resume=True) is None
    for step in (1, 2):
        (tmp_path / "metrics.jsonl").open("ab").write(orjson.dumps({"step": step}) + b"\n")
    save_state(tmp_path, 1, _Model(), opt)
    with pytest.raises(UserError, match="--resume"):
        refuse_or_resume(tmp_path, resume=False)
    step, adapter, extra = refuse_or_resume(tmp_path, resume=True)
    assert step == 1 and (adapter / "adapter_config.json").is_file() and "torch_rng" in extra
    assert [orjson.loads(x)["step"] for x in (tmp_path / "metrics.jsonl").read_bytes().splitlines()] == [1]


def test_report_links_each_step_to_its_episodes_and_escapes_them(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_bytes(
        orjson.dumps(
            {
                "step": 1,
                "reward_mean": 0.25,
                "complete_loop_rate": 0.5,
                "scored": 1,
                "episodes": 2,
                "groups": 1,
                "zero_variance_groups": 0,
                "loss": 0.1,
            }
        )
        + b"\n"
    )
    rows = [
        {"step": 1, "task_id": "t|<b>", "group_index": 0, "reward": 0.25, "episode_dir": "rollouts/step-0001/a"},
        {
            "step": 1,
            "task_id": "t2",
            "group_index": 1,
            "reward": None,
            "unscored": "episode error: <x>",
            "episode_dir": "rollouts/step-0001/b",
        },
    ]
    (tmp_path / "episodes.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    text = write_rl_report(tmp_path).read_text()
    assert "| 1 | 0.250 | 0.500 | 1 / 2 |" in text and "(<rollouts/step-0001/a>)" in text
    assert "<b>" not in text and "<x>" not in text and "t2 g1 (unscored)" in text


def test_no_step_starts_once_the_time_budget_is_spent_and_the_run_says_why() -> None:
    from harnessfit.train.rl.loop import run_steps

    now = [0.0]
    ran: list[int] = []

    def step(n: int) -> None:  # each step takes 40 s of the fake clock
        ran.append(n)
        now[0] += 40.0

    end = run_steps(1, 10, step, max_seconds=100, should_stop=lambda: None, clock=lambda: now[0])
    assert ran == [1, 2, 3]  # 80 s < 100 s: step 3 starts and runs to its end; at 120 s none starts
    assert end.step == 3 and end.stop is None and end.ended == "time budget of 100 s spent after step 3 (120 s)"
    ran.clear()
    end = run_steps(4, 5, step, max_seconds=None, should_stop=lambda: None, clock=lambda: now[0])
    assert ran == [4, 5] and end.step == 5 and end.ended == "max_steps 5 reached"
    ran.clear()
    end = run_steps(
        1, 10, step, max_seconds=1e9, should_stop=lambda: "host memory low" if ran else None, clock=lambda: now[0]
    )
    assert ran == [1] and end.stop == "host memory low" and "health guard after step 1" in end.ended


def test_budget_and_held_out_suite_settings_are_checked(tmp_path: Path) -> None:
    from harnessfit.eval.run import default_suite
    from harnessfit.train.config import load_config
    from harnessfit.train.rl.config import HarnessfitRLConfig
    from harnessfit.train.rl.heldout import eval_suite_path

    cfg = load_config(
        HarnessfitRLConfig, None, ["--max_seconds", "1800", "--eval_suite", "default"], output_dir=str(tmp_path)
    )
    assert cfg.max_seconds == 1800 and cfg.eval_seeds == 3
    assert eval_suite_path(cfg.eval_suite) == default_suite() and eval_suite_path(None) is None
    with pytest.raises(UserError, match=r"max_seconds=0\.0: the time budget must be positive"):
        load_config(HarnessfitRLConfig, None, ["--max_seconds", "0"], output_dir=str(tmp_path))
    with pytest.raises(UserError, match="eval_seeds must be at least 1"):
        load_config(HarnessfitRLConfig, None, ["--eval_seeds", "0"], output_dir=str(tmp_path))
    with pytest.raises(UserError, match=r"eval_suite .*nope: no such folder"):
        eval_suite_path(str(tmp_path / "nope"))


def test_report_has_the_held_out_before_after_table_with_intervals(tmp_path: Path) -> None:
    import shutil

    data = Path(__file__).resolve().parents[1] / "eval" / "data" / "results_before"
    shutil.copytree(data / "eval-never-stop", tmp_path / "eval_before")
    text = write_rl_report(
        tmp_path, ended="max_steps 2 reached", missing_evals={"after": "the health guard stopped the run"}
    ).read_text()
    assert "Ended: max\\_steps 2 reached." in text and "## Held-out suite before / after" in text
    assert "| metric | before |" in text and "- no after eval: the health guard stopped the run" in text
    shutil.copytree(data / "eval-golden", tmp_path / "eval_after")
    text = write_rl_report(tmp_path).read_text()
    assert "| metric | before | after |" in text and "no after eval" not in text
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert rows["Complete loop (checker passed + expected change + final response)"].endswith(
        "| 0% [0–66] (0/2) | 100% [51–100] (4/4) |"
    )
    for label in (
        "Independent checker passed",
        "Valid tool calls",
        "Finished with a response",
        "Turn cap hit",
        "Scored / unscored episodes",
    ):
        assert label in rows
    assert "different task suites" in text  # the two fixtures ran different suites: said, not hidden
    (tmp_path / "none").mkdir()
    assert "Held-out" not in write_rl_report(tmp_path / "none").read_text()  # no eval asked for: no section


def test_resume_drops_the_capture_of_a_step_the_kill_cut_short(tmp_path: Path) -> None:
    """The engine's capture appends to an episode's file (a restarted server continues its numbering): a step 2
    killed half-way left turns under the keys the resumed step 2 uses again, which would join the new episode's
    trace. Resuming after step 1 drops them (and that step's episode folders); step 1's and the evals' stay."""
    import torch

    from harnessfit.train.rl.rollout import episode_name
    from harnessfit.train.rl.state import refuse_or_resume, save_state

    class _Model:
        def save_pretrained(self, path: str, selected_adapters: list[str]) -> None:
            Path(path).mkdir(parents=True)

    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], lr=0.1)
    save_state(tmp_path, 1, _Model(), opt)
    capture = tmp_path / "capture"
    capture.mkdir()
    names = [episode_name(1, "t", 0), episode_name(2, "t", 0), episode_name(12, "t-s0002", 1), "eval-before"]
    for name in names:
        (capture / f"{name}.jsonl").write_text("{}\n")
    for step in (1, 2):
        (tmp_path / "rollouts" / f"step-{step:04d}" / "episodes").mkdir(parents=True)
    refuse_or_resume(tmp_path, resume=True)
    assert sorted(p.stem for p in capture.iterdir()) == sorted([names[0], "eval-before"])
    assert [p.name for p in (tmp_path / "rollouts").iterdir()] == ["step-0001"]
