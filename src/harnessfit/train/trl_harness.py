"""The real Pi as the environment behind TRL's harness-session interface (TRL 1.16 ``trl.experimental.async_grpo``).

TRL's loop-owning path (``openenv_harness._HarnessRolloutLoop``) calls ``harness_session_factory(sampling=...)`` once
and gets an OpenEnv ``ResourceSessionFactory``; per rollout it calls ``factory.create(task, seed=group_id,
episode_id=uuid)``, then ``session.wait_for_completion()``, ``session.fetch_training_trace()`` (an OpenEnv
``TrainingTrace``: per turn the prompt ids, sampled ids, their processed logprobs and the loss mask — a broken one is
fatal to the run), ``session.verify(messages)`` (``env_reward`` None = unscored, left out of the group, never 0) and
``session.close()``.

Here a session is one Pi episode of a harnessfit task, run by the eval runner (``eval.episode_runner.run_episode``: the
sandbox, the caps, the independent checker) against the endpoint, with the session's own API key. The endpoint
files every turn it serves under that key: ``harnessfit serve --capture-dir DIR --temperature T`` (``serve.capture``),
or any capture that maps a key to a ``TrainingTrace``-shaped dict (``trace_source``). The reward comes from the
checker, never from anything the policy could write: 1.0 when it passed, 0.0 when it failed, None when it never
ran (the episode errored, was unscored or needs a container).

The sampling TRL pins (``training_sampling``: a temperature, top-p 1, no truncation) must be what the endpoint used:
every captured turn records its sampling, and a turn sampled otherwise makes ``fetch_training_trace`` raise
``ValueError`` (TRL turns that into its fatal ``CaptureContractError``). Needs ``openenv`` (``make setup`` installs
it) — imported only when a factory is built.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harnessfit.errors import UserError
from harnessfit.eval.episode_runner import Endpoint, run_episode
from harnessfit.eval.task import Task
from harnessfit.serve.capture import episode_key, training_trace

__all__ = ["pi_session_factory", "episode_reward"]

_TOLERANCE = 1e-6


def episode_reward(facts: Any) -> float | None:
    """The checker's verdict as a reward: 1.0 passed, 0.0 failed, None when it never ran (unscored)."""
    if facts is None or facts.status != "ok" or facts.checker_exit_code is None:
        return None
    return 1.0 if facts.checker_exit_code == 0 else 0.0


def _check_sampling(trace: dict[str, Any], sampling: dict[str, Any]) -> None:
    """Raise ValueError when a captured turn was sampled otherwise than the policy TRL pinned."""
    want_t, want_p = sampling.get("temperature"), sampling.get("top_p", 1.0)
    for turn in trace["turns"]:
        used = (turn.get("metadata") or {}).get("sampling")
        if want_t is None:
            continue
        if used is None:
            raise ValueError(f"turn {turn['node_id']}: the capture does not say how it was sampled")
        if abs(float(used["temperature"]) - float(want_t)) > _TOLERANCE or abs(float(used["top_p"]) - want_p) > 1e-9:
            raise ValueError(
                f"turn {turn['node_id']} was sampled at temperature {used['temperature']}, top_p "
                f"{used['top_p']}; the training policy is temperature {want_t}, top_p {want_p} (serve "
                f"with --temperature {want_t})"
            )


def _classes() -> tuple[Any, Any, Any, Any]:
    try:
        from openenv.core.harness import ResourceSession, ResourceSessionFactory, TrainingTrace, VerifyResult
    except ImportError as exc:
        raise UserError(
            f"TRL's harness interface needs OpenEnv ({exc}); run `make setup` (it installs openenv==0.10.0)"
        ) from None
    return ResourceSession, ResourceSessionFactory, TrainingTrace, VerifyResult


def pi_session_factory(
    tasks: Sequence[Task],
    *,
    base_url: str,
    model_id: str,
    run_dir: Path,
    capture_dir: Path | None = None,
    trace_source: Callable[[str], dict[str, Any]] | None = None,
    harness: str | None = None,
    sandbox: bool = True,
    max_turns: int | None = None,
) -> Callable[..., Any]:
    """What TRL's ``HarnessRolloutWorker`` takes as ``harness_session_factory``: a callable that, given TRL's
    ``sampling=`` policy, returns an OpenEnv ``ResourceSessionFactory`` of Pi episodes.

    ``tasks``: what a rollout's ``task`` argument may name — a task, its id or its prompt, a dict with a ``task_id``,
    or chat messages whose last user message is one of these (TRL passes the dataset row's prompt); an int picks
    ``tasks[n % len(tasks)]``. Captured turns are read from ``capture_dir`` (the server's ``--capture-dir``)
    or through ``trace_source(key)``."""
    if (capture_dir is None) == (trace_source is None):
        raise UserError("give the capture: capture_dir (harnessfit serve --capture-dir) or trace_source, not both")
    if not tasks:
        raise UserError("pi_session_factory needs at least one task")
    read = trace_source or (lambda key: training_trace(Path(capture_dir), key))  # type: ignore[arg-type]
    by_id = {task.id: task for task in tasks}
    by_prompt = {task.prompt: task for task in tasks}
    resource_session, session_factory, trace_model, verify_result = _classes()

    def pick(task: Any) -> Task:
        if isinstance(task, Task):
            return task
        if isinstance(task, list):  # TRL's dataset prompt: chat messages; the last user message names the task
            users = [m.get("content") for m in task if isinstance(m, dict) and m.get("role") == "user"]
            task = users[-1] if users else None
        if isinstance(task, dict):
            task = task.get("task_id", task.get("id", task.get("prompt")))
        if isinstance(task, str) and task in by_prompt:
            return by_prompt[task]
        if isinstance(task, int):
            return list(tasks)[task % len(tasks)]
        if isinstance(task, str) and task in by_id:
            return by_id[task]
        raise UserError(f"unknown task {str(task)[:80]!r}: the factory knows {sorted(by_id)[:5]} …")

    class PiEpisodeSession(resource_session):
        """One Pi episode, started in a thread when the session is created."""

        def __init__(self, task: Task, seed: int, key: str, sampling: dict[str, Any]) -> None:
            self.task, self.seed, self.key, self.sampling = task, seed, key, sampling
            self.facts: Any = None
            self.failure: BaseException | None = None
            endpoint = Endpoint(base_url, model_id, api_key=key)
            self._thread = threading.Thread(target=self._run, args=(endpoint,), name=f"pi-episode-{key}", daemon=True)
            self._thread.start()

        def _run(self, endpoint: Endpoint) -> None:
            try:
                self.facts = run_episode(
                    self.task,
                    self.seed,
                    endpoint,
                    Path(run_dir) / self.key,
                    harness=harness,
                    sandbox=sandbox,
                    max_turns=max_turns,
                )
            except BaseException as exc:  # noqa: BLE001 - reported by verify() as an unscored episode
                self.failure = exc

        def wait_for_completion(self, timeout_s: float | None = None) -> int:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                raise TimeoutError(f"Pi episode {self.key} still running after {timeout_s} s")
            code = getattr(self.facts, "pi_exit_code", None)
            return code if isinstance(code, int) else 1

        def fetch_training_trace(self) -> Any:
            trace = read(self.key)
            _check_sampling(trace, self.sampling)
            return trace_model.model_validate(trace)

        def verify(self, transcript: list[dict[str, Any]], final_state: Any | None = None) -> Any:
            facts = self.facts
            metrics = {
                "status": getattr(facts, "status", "error"),
                "task_id": self.task.id,
                "seed": self.seed,
                "turn_cap_hit": getattr(facts, "turn_cap_hit", None),
                "error": getattr(facts, "error", None) or (repr(self.failure) if self.failure else None),
            }
            return verify_result(env_reward=episode_reward(facts), done=True, metrics=metrics)

        def initial_messages(self) -> list[dict[str, Any]]:
            return [{"role": "user", "content": self.task.prompt}]

        def list_tools(self) -> list[Any]:
            return []  # Pi owns its tools: the loop-owning path never calls them through the session

        def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
            raise NotImplementedError("Pi runs its own tools; this session serves TRL's loop-owning path only")

        def close(self) -> None:
            self._thread.join()  # the runner's own caps (turns, wall clock, output) bound the episode

    class PiSessionFactory(session_factory):
        def __init__(self, sampling: dict[str, Any] | None = None) -> None:
            self.sampling = dict(sampling or {})

        def create(self, task: Any, seed: int | None = None, episode_id: str | None = None) -> Any:
            import uuid

            key = episode_key(f"Bearer {episode_id or uuid.uuid4().hex}")
            return PiEpisodeSession(pick(task), seed or 0, key, self.sampling)

    return PiSessionFactory
