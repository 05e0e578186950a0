"""One step's rollouts: G real Pi episodes per task against the policy, several at once, each with its own key.

An episode is the eval's own: ``eval.episode_runner.run_episode`` (the sandbox, the caps, the independent checker) and
``eval.scorers.score_episode`` (the same metrics ``eval agent`` reports). Its turns come from the engine's capture
(``serve.capture.training_trace``), linked by token prefix (``train.rl.episodes``); its reward from the metrics and
the per-turn components (``train.rl.rewards``), and — when weighted — the LLM judge's verdict on the episode's
transcript as the eval recorded it (``train.rl.judge``). The run folder keeps every episode (``rollouts/step-NNNN/episodes/
<task>/seed-<g>``) so the report links each point to the episodes behind it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessfit.errors import UserError
from harnessfit.eval.episode_runner import Endpoint, run_episode
from harnessfit.eval.record import record_episode
from harnessfit.eval.scorers import score_episode
from harnessfit.rewards.judge import Verdict
from harnessfit.serve.capture import episode_key, training_trace
from harnessfit.train.rl.episodes import CapturedTurn, Segment, link_segments, turns_of
from harnessfit.train.rl.judge import judge_episode
from harnessfit.train.rl.rewards import EpisodeReward, episode_reward, turn_scores, unscored_reason

__all__ = ["Rollout", "RolloutSettings", "run_rollouts", "episode_name"]


@dataclass
class RolloutSettings:
    """What every episode of a run shares."""

    harness: str
    card: Any
    weights: dict[str, float]
    reward_set: Any  # rewards.reward_set.RewardSet over the per-turn components
    tools: list[dict[str, Any]]
    max_turns: int
    max_seconds: float
    workers: int
    sandbox: bool = True
    context_window: int | None = None
    judge: Any = None  # rewards.judge.JudgeClient when the judge component has a weight, else None


@dataclass
class Rollout:
    """One finished episode: where it ran, its eval facts and metrics, its captured turns and segments, reward."""

    step: int
    task_id: str
    group_index: int
    key: str
    episode_dir: str
    facts: Any
    metrics: Any
    turns: list[CapturedTurn] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    reward: EpisodeReward = field(default_factory=lambda: EpisodeReward(None, {}, "not run"))
    advantage: float | None = None
    capture_error: str | None = None
    judge: Any = None  # the judge's Verdict (None: not asked)

    def row(self) -> dict[str, Any]:
        m = self.metrics
        return {
            "step": self.step,
            "task_id": self.task_id,
            "group_index": self.group_index,
            "key": self.key,
            "episode_dir": self.episode_dir,
            "status": self.facts.status,
            "error": self.facts.error,
            "reward": self.reward.reward,
            "components": self.reward.components,
            "unscored": self.reward.unscored,
            "advantage": self.advantage,
            "complete_loop": m.complete_loop if m else None,
            "checker_passed": m.checker_passed if m else None,
            "turn_cap_hit": self.facts.turn_cap_hit,
            "turns": len(self.turns),
            "rewarded_turns": sum(t.rewarded for t in self.turns),
            "segments": len(self.segments),
            "sampled_tokens": sum(s.sampled for s in self.segments),
            "capture_error": self.capture_error,
            "wall_seconds": self.facts.wall_seconds,
            **(
                {"judge_critique": self.judge.critique, "judge_reason": self.judge.reason}
                if self.judge is not None
                else {}
            ),
            # the eval's own record of the episode (its files are relative to rollouts/step-NNNN): the report's
            # episode pages are built from them, as for an eval's results.json
            "facts": _dump(self.facts),
            "metrics": _dump(m),
        }


def _dump(model: Any) -> dict[str, Any] | None:
    return model.model_dump(mode="json") if hasattr(model, "model_dump") else None


def episode_name(step: int, task_id: str, g: int) -> str:
    """The episode's API key (and capture file name): unique in the run."""
    return episode_key(f"Bearer s{step:04d}-{task_id}-g{g}")


def _score(facts: Any, task: Any, run_dir: Path, s: RolloutSettings) -> Any:
    if facts.status != "success":
        return None
    try:
        return score_episode(facts, task, run_dir, s.card, s.harness)
    except Exception as exc:  # noqa: BLE001 - a scorer crash makes the episode unscored (as eval.run does)
        facts.status, facts.error = "error", f"scorer failed: {type(exc).__name__}: {exc}"
        return None


def _judge(facts: Any, task: Any, run_dir: Path, s: RolloutSettings) -> Any:
    """The judge's verdict on the episode as the eval recorded it (the messages its metrics were scored from)."""
    try:
        messages = record_episode(facts, task, run_dir, s.card, s.harness).messages
    except Exception as exc:  # noqa: BLE001 - an unreadable record leaves the judge unscorable, as a bad reply does
        return Verdict(None, reason=f"no transcript: {type(exc).__name__}: {exc}"[:300])
    names = [str((t.get("function") or {}).get("name")) for t in s.tools]
    return judge_episode(s.judge, task.prompt, messages, facts, names)


def _one(step: int, task: Any, g: int, base: str, capture_dir: Path, run_dir: Path, s: RolloutSettings) -> Rollout:
    key = episode_name(step, task.id, g)
    endpoint = Endpoint(f"{base}/v1", "policy", "policy", s.context_window, api_key=key)
    facts = run_episode(
        task,
        g,
        endpoint,
        run_dir,
        harness=s.harness,
        sandbox=s.sandbox,
        max_turns=s.max_turns,
        max_seconds=s.max_seconds,
    )
    metrics = _score(facts, task, run_dir, s)
    ro = Rollout(step, task.id, g, key, str(Path(facts.events_file).parent), facts, metrics)
    try:
        ro.turns = turns_of(training_trace(capture_dir, key))
        ro.segments = link_segments(ro.turns)
    except UserError:  # no turn captured: the agent was stopped before the model answered; nothing to train on
        pass
    except ValueError as exc:  # a broken capture is never trained on, and unscores the episode
        ro.capture_error = str(exc)
    values = turn_scores(s.reward_set, ro.turns, s.tools, list(s.weights))
    reasons: dict[str, str] = {}
    if s.judge is not None and s.weights.get("judge") and unscored_reason(facts, metrics) is None:
        ro.judge = _judge(facts, task, run_dir, s)
        values["judge"] = ro.judge.score
        if ro.judge.reason:
            reasons["judge"] = ro.judge.reason
    ro.reward = episode_reward(facts, metrics, values, s.weights, reasons)
    if ro.capture_error and ro.reward.reward is not None:
        ro.reward = EpisodeReward(None, ro.reward.components, f"capture: {ro.capture_error[:200]}")
    return ro


def run_rollouts(
    step: int,
    tasks: Sequence[Any],
    generations: int,
    base: str,
    capture_dir: Path,
    run_dir: Path,
    settings: RolloutSettings,
    on_done: Callable[[Rollout], None] | None = None,
) -> list[Rollout]:
    """``generations`` episodes of every task, ``settings.workers`` at once; ``on_done`` after each."""
    jobs = [(task, g) for task in tasks for g in range(generations)]
    out: list[Rollout] = []

    def job(item: tuple[Any, int]) -> Rollout:
        return _one(step, item[0], item[1], base, capture_dir, run_dir, settings)

    with ThreadPoolExecutor(max_workers=settings.workers) as pool:
        for ro in pool.map(job, jobs):
            out.append(ro)
            if on_done is not None:
                on_done(ro)
    return out
