"""Harbor's verifier rules (issue 29, item 1): ``reward.json`` is read before ``reward.txt`` (Harbor's
``src/harbor/verifier/verifier.py``, ``Verifier.verify``), a multi-key ``reward.json`` is kept whole with its scalar
chosen as Harbor chooses it, non-finite numbers are refused with the reason, and the episode records the verifier's
own output (stdout, stderr, the reward files) beside the backend and the image it ran for."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harnessfit.eval.episode import EpisodeFacts
from harnessfit.eval.harbor import load_harbor_task, parse_reward
from harnessfit.eval.sandbox import sandbox_status


@pytest.fixture(scope="module")
def word_frequency(repo_root) -> Path:
    return repo_root / "examples" / "tasks" / "harbor" / "word-frequency"


def _write(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("reward.txt", "reward.json"):
        (folder / name).unlink(missing_ok=True)
    for key, text in files.items():
        (folder / key.replace("_", ".")).write_text(text)
    return folder


def test_reward_json_is_read_before_reward_txt(tmp_path):
    both = _write(tmp_path, reward_txt="1\n", reward_json='{"reward": 0.0}')
    assert parse_reward(both) == (0.0, {"reward": 0.0}, None)
    _write(tmp_path, reward_txt="0\n", reward_json='{"reward": 1}')
    assert parse_reward(tmp_path)[0] == 1.0
    _write(tmp_path, reward_txt="0.75\n")
    assert parse_reward(tmp_path) == (0.75, {"reward": 0.75}, None)  # reward.txt alone: {"reward": value}
    # a reward.json that is there decides, even when it is unusable: Harbor raises, it never falls back
    for bad, why in (("", "reward.json is empty"), ("[1]", "not an object"), ("{reward", "not JSON")):
        _write(tmp_path, reward_txt="1\n", reward_json=bad)
        value, _, problem = parse_reward(tmp_path)
        assert value is None and why in problem, (bad, problem)
    _write(tmp_path)
    assert parse_reward(tmp_path) == (None, None, "the verifier wrote no reward.json or reward.txt")


def test_multi_key_reward_json_is_kept_whole(tmp_path):
    _write(tmp_path, reward_json='{"reward": 0.5, "tests_passed": 3, "style": 1}')
    assert parse_reward(tmp_path) == (0.5, {"reward": 0.5, "tests_passed": 3.0, "style": 1.0}, None)
    _write(tmp_path, reward_json='{"accuracy": 1}')
    assert parse_reward(tmp_path) == (1.0, {"accuracy": 1.0}, None)  # the only value is the scalar
    # several values and none named "reward": no scalar (Harbor's primary reward is None), every value kept,
    # and reward.txt beside it does not supply one
    _write(tmp_path, reward_txt="1\n", reward_json='{"a": 1, "b": 0}')
    value, rewards, problem = parse_reward(tmp_path)
    assert value is None and rewards == {"a": 1.0, "b": 0.0} and "none named 'reward'" in problem


@pytest.mark.parametrize(
    "files",
    [
        {"reward_txt": "nan\n"},
        {"reward_txt": "inf"},
        {"reward_txt": "-Infinity\n"},
        {"reward_json": '{"reward": NaN}'},
        {"reward_json": '{"reward": Infinity}'},
        {"reward_json": '{"reward": 1e999}'},
        {"reward_json": '{"reward": 1, "style": -Infinity}'},
    ],
)
def test_non_finite_rewards_are_refused_with_the_reason(tmp_path, files):
    _write(tmp_path, **files)
    value, _, problem = parse_reward(tmp_path)
    assert value is None and "not a finite number" in problem


def test_reward_txt_that_is_not_a_number(tmp_path):
    for text, why in (("lots", "not a number"), ("", "reward.txt is empty"), ("true", "not a number")):
        _write(tmp_path, reward_txt=text)
        value, _, problem = parse_reward(tmp_path)
        assert value is None and why in problem
    _write(tmp_path, reward_json='{"reward": true}')  # a JSON boolean is no number
    assert parse_reward(tmp_path)[0] is None


def _task_writing(tmp_path: Path, word_frequency: Path, script: str):
    task_dir = tmp_path / "suite" / "both-rewards"
    shutil.copytree(word_frequency, task_dir)
    (task_dir / "tests" / "test.sh").write_text("#!/bin/bash\n" + script)
    spec = task_dir / "task.toml"
    spec.write_text(spec.read_text().replace("[verifier]\n", '[verifier]\nenv = { VERIFY_MODE = "strict" }\n'))
    return load_harbor_task(task_dir)


@pytest.mark.parametrize(
    ("txt", "json", "reward", "passed"),
    [
        ("1", '{"reward": 0.0, "tests_passed": 2}', 0.0, False),
        ("0", '{"reward": 1.0, "tests_passed": 3}', 1.0, True),
    ],
)
def test_verifier_writing_both_files_is_scored_as_harbor_scores_it(tmp_path, word_frequency, txt, json, reward, passed):
    """A test.sh that writes reward.txt and reward.json with different values: the reward is reward.json's, every
    key is kept, and the episode records both files and what test.sh printed."""
    if sandbox_status() != "bwrap":
        pytest.skip(f"bubblewrap cannot run here: {sandbox_status()}")
    task = _task_writing(
        tmp_path,
        word_frequency,
        f"echo \"checking <b>$VERIFY_MODE</b>\"\necho 'to stderr' >&2\n"
        f"echo {txt} > /logs/verifier/reward.txt\necho '{json}' > /logs/verifier/reward.json\n",
    )
    assert task.config.verifier.env == {"VERIFY_MODE": "strict"}
    ep = tmp_path / "ep"
    ws = ep / "workspace"
    ws.mkdir(parents=True)
    task.seed_workspace(ws)
    facts = EpisodeFacts(task_id=task.id, seed=0, sandbox="bwrap", max_turns=1, events_file="e", stderr_file="s")
    task.verify(ws, ep, facts)
    assert facts.reward == reward and (facts.checker_exit_code == 0) is passed
    assert facts.rewards == {"reward": reward, "tests_passed": 3.0 if passed else 2.0}
    out = facts.verifier
    assert out is not None and out.exit_code == 0 and out.problem is None
    assert out.reward_files == {"reward.json": json + "\n", "reward.txt": txt + "\n"}
    assert "checking <b>strict</b>" in out.stdout and out.stderr == "to stderr\n"  # [verifier].env reached it
