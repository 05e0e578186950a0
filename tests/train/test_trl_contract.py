"""TRL's harness contract: a Pi session from ``train.trl_harness`` is consumed by TRL 1.16's own loop-owning code.

``consume_like_trl`` makes the calls ``trl.experimental.async_grpo.openenv_harness._HarnessRolloutLoop._run_session``
makes on a session that owns its loop, with TRL's own functions (``_turns_from_training_trace``,
``TrainingTrace.to_trace_entries``, ``_messages_from_trace``, the tool tallies, ``_chain_to_sequences``), and fails
where TRL would raise its fatal ``CaptureContractError``. The fast test feeds it a scripted capture (known tokens);
the slow one a real Pi episode against harnessfit's engine (embedded SmolLM2, capture on) standing in for vLLM.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("openenv.core.harness", reason="openenv==0.10.0 (make setup) is TRL's harness interface")
harness_mod = pytest.importorskip("trl.experimental.async_grpo.openenv_harness")

from harnessfit.errors import UserError  # noqa: E402 - after the importorskip guards
from harnessfit.serve.capture import CaptureStore  # noqa: E402 - after the importorskip guards
from harnessfit.train.trl_harness import episode_reward, pi_session_factory  # noqa: E402 - after the importorskip guards

worker = pytest.importorskip("trl.experimental.async_grpo.async_rollout_worker")
SUITE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "default"


def consume_like_trl(session) -> dict:
    """The loop-owning branch of TRL's ``_run_session``, with TRL's functions; returns what it hands the trainer."""
    from openenv.core.harness import TrainableSession

    assert isinstance(session, TrainableSession)  # TRL raises CaptureContractError otherwise
    session.wait_for_completion()
    captured = session.fetch_training_trace()
    turns = harness_mod._turns_from_training_trace(captured)
    entries = captured.to_trace_entries()
    completion = harness_mod._messages_from_trace(entries)
    calls = harness_mod._tool_call_counts_by_name(entries)
    failures = harness_mod._tool_failures_by_name(entries)
    verify = session.verify(completion)
    sequences, tally = worker._chain_to_sequences(turns, "rollout-1", 0)  # lossless capture: fork threshold 0
    session.close()
    return {
        "turns": turns,
        "completion": completion,
        "calls": calls,
        "failures": failures,
        "verify": verify,
        "sequences": sequences,
        "tally": tally,
    }


def _task(suite: Path):
    from harnessfit.eval.task import load_suite

    return load_suite(suite)


def _record(
    store: CaptureStore,
    key: str,
    prompt: list[int],
    sampled: list[int],
    *,
    temperature: float = 1.0,
    calls: list | None = None,
) -> None:
    message = {"role": "assistant", "content": "x", **({"tool_calls": calls} if calls else {})}
    store.record(
        key,
        prompt_ids=prompt,
        sampled_ids=sampled,
        logprobs=[-0.25] * len(sampled),
        request={"messages": [{"role": "user", "content": "do it"}], "tools": None},
        response={"choices": [{"message": message, "finish_reason": "stop"}]},
        metadata={"sampling": {"temperature": temperature, "top_p": 1.0}},
    )


class _Facts:
    status, checker_exit_code, pi_exit_code, turn_cap_hit, error = "ok", 0, 0, False, None


def test_trl_accepts_a_scripted_two_turn_capture(tmp_path: Path, monkeypatch) -> None:
    import harnessfit.train.trl_harness as mod

    monkeypatch.setattr(mod, "run_episode", lambda *a, **k: _Facts())  # the episode itself is the slow test's job
    tasks = _task(SUITE)
    factory_cls = pi_session_factory(
        tasks, base_url="http://127.0.0.1:1/v1", model_id="m", run_dir=tmp_path / "run", capture_dir=tmp_path / "cap"
    )
    factory = factory_cls(sampling={"temperature": 1.0, "top_p": 1.0, "top_k": -1})
    session = factory.create(0, seed=3, episode_id="ep-1")
    store = CaptureStore(tmp_path / "cap")
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    _record(store, session.key, [1, 2, 3], [4, 5, 9], calls=[call])
    _record(store, session.key, [1, 2, 3, 4, 5, 9, 6, 7], [8, 9])  # turn 2 extends turn 1 by the tool result
    out = consume_like_trl(session)
    assert [(t.prompt_ids, t.output_ids, t.output_mask) for t in out["turns"]] == [
        ([1, 2, 3], [4, 5, 9], [1, 1, 1]),
        ([1, 2, 3, 4, 5, 9, 6, 7], [8, 9], [1, 1]),
    ]
    (row,) = out["sequences"]  # linked by exact token prefix: one training row, no fork
    assert row.input_ids == [1, 2, 3, 4, 5, 9, 6, 7, 8, 9]
    assert row.completion_mask == [0, 0, 0, 1, 1, 1, 0, 0, 1, 1]
    assert row.old_log_probs == [0.0] * 3 + [-0.25] * 3 + [0.0] * 2 + [-0.25] * 2
    assert out["tally"]["clean"] == 1 and out["tally"]["fork"] == 0
    assert out["verify"].env_reward == 1.0 and out["calls"] == {"bash": 1}  # tallied over every captured turn
    assert out["completion"][0] == {"role": "user", "content": "do it"}


def test_a_turn_sampled_off_policy_or_a_broken_capture_is_refused(tmp_path: Path, monkeypatch) -> None:
    import harnessfit.train.trl_harness as mod

    monkeypatch.setattr(mod, "run_episode", lambda *a, **k: _Facts())
    tasks = _task(SUITE)
    factory = pi_session_factory(
        tasks, base_url="http://x/v1", model_id="m", run_dir=tmp_path / "run", capture_dir=tmp_path / "cap"
    )(sampling={"temperature": 1.0})
    store = CaptureStore(tmp_path / "cap")
    hot = factory.create(tasks[0].id, episode_id="hot")
    _record(store, hot.key, [1], [2], temperature=0.0)
    with pytest.raises(ValueError, match=r"sampled at temperature 0\.0"):
        consume_like_trl(hot)
    broken = factory.create({"task_id": tasks[0].id}, episode_id="broken")
    (tmp_path / "cap" / "broken.jsonl").write_text(
        '{"node_id": "b:0", "prompt_token_ids": [1], "completion_token_ids": [2], "per_token_logps": [0.5], '
        '"loss_mask": [0, 1], "metadata": {"sampling": {"temperature": 1.0, "top_p": 1.0}}}\n'
    )
    with pytest.raises(ValueError, match="positive"):  # OpenEnv's validator: a logprob above 0
        consume_like_trl(broken)
    assert factory.create([{"role": "user", "content": tasks[1].prompt}], episode_id="by-prompt").task is tasks[1]
    with pytest.raises(UserError, match="unknown task"):
        factory.create("no-such-task")


def test_rewards_are_the_checkers_verdict_and_none_when_it_never_ran() -> None:
    class F(_Facts):
        pass

    assert episode_reward(F()) == 1.0
    F.checker_exit_code = 1
    assert episode_reward(F()) == 0.0
    F.status = "error"
    assert episode_reward(F()) is None and episode_reward(None) is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.pi
def test_trl_accepts_a_real_pi_episode_captured_by_the_engine(pi_installed, tmp_path: Path) -> None:
    import uvicorn

    from harnessfit.eval.sandbox import sandbox_status
    from harnessfit.serve.app import create_app
    from harnessfit.serve.engine import load_engine

    engine = load_engine("smollm2-135m", max_tokens=48, model_id="m")
    engine.default_temperature = 1.0  # Pi sends no temperature: the server samples at the training one
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(engine, capture=CaptureStore(tmp_path / "cap")), host="127.0.0.1", port=port, log_level="warning"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.1)
    try:
        tasks = _task(SUITE)
        factory = pi_session_factory(
            tasks,
            base_url=f"http://127.0.0.1:{port}/v1",
            model_id="m",
            run_dir=tmp_path / "run",
            capture_dir=tmp_path / "cap",
            max_turns=2,
            sandbox=sandbox_status() == "bwrap",
        )(sampling={"temperature": 1.0, "top_p": 1.0})
        out = consume_like_trl(factory.create(0, seed=0, episode_id="pi-ep"))
    finally:
        server.should_exit = True
        thread.join(30)
    turns = out["turns"]
    assert 1 <= len(turns) <= 2, out["verify"].metrics
    for turn in turns:  # ids, logprobs and masks consistent, as TRL reads them
        assert turn.prompt_ids and turn.output_ids and len(turn.output_log_probs) == len(turn.output_ids)
        assert turn.output_mask == [1] * len(turn.output_ids) and all(lp <= 0 for lp in turn.output_log_probs)
    trained = sum(sum(row.completion_mask) for row in out["sequences"])
    assert trained == sum(len(t.output_ids) for t in turns)  # every sampled token is trained, nothing else
    assert out["completion"] and out["completion"][0]["role"] in ("system", "user")
    assert out["verify"].env_reward in (0.0, 1.0, None)
