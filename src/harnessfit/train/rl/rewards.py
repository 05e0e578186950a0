"""Episode rewards for RL in the real harness, and the group-relative advantages computed from them.

One episode's reward is built from named components, each a number or ``None``:

- ``checker_passed`` (score): the task's independent checker passed (1) or not (0);
- ``complete_loop`` (score): checker passed and the agent finished with a response (the eval's headline metric);
- the per-turn verifiable components of ``harnessfit.rewards`` (``format``, ``arguments_object``,
  ``schema_valid``, ``tool_active``, ``clean_end``; score): each rewarded turn's completion decoded from its
  captured ids and scored by the registry's own function, averaged over the episode's rewarded turns;
- ``judge`` (score, off unless weighted): an LLM judge's verdict on the whole episode (``train.rl.judge``), 0–1;
  None when the judge was unreachable or gave no usable verdict (never 0);
- ``turn_cap`` and ``runaway`` (penalties): -1 when the episode ran into the turn cap, or was killed for its output
  or the wall clock (0 otherwise).

reward = weighted mean of the score components + sum of the weighted penalties — the same rule as the single-turn
rewards (``harnessfit.rewards``). An episode the environment could not score (the sandbox or the harness
failed, the checker never ran, an integrity flag that unscores it) has reward ``None``: it leaves its group and gets
no advantage — it is never a 0. Every component is logged per episode, with why it is None.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EPISODE_COMPONENTS",
    "TURN_COMPONENTS",
    "PENALTIES",
    "DEFAULT_RL_WEIGHTS",
    "EpisodeReward",
    "episode_reward",
    "check_weights",
    "group_advantages",
    "turn_scores",
    "unscored_reason",
]

EPISODE_COMPONENTS = ("checker_passed", "complete_loop", "judge")
TURN_COMPONENTS = ("format", "arguments_object", "schema_valid", "tool_active", "clean_end")
PENALTIES = ("turn_cap", "runaway")
DEFAULT_RL_WEIGHTS: dict[str, float] = {
    "checker_passed": 1.0,
    "complete_loop": 1.0,
    "format": 0.25,
    "schema_valid": 0.25,
    "clean_end": 0.25,
    "turn_cap": 0.5,
    "runaway": 0.5,
}


@dataclass
class EpisodeReward:
    """One episode's reward (None = unscored), every component's value, and why it is unscored."""

    reward: float | None
    components: dict[str, float | None] = field(default_factory=dict)
    unscored: str | None = None


def check_weights(mapping: dict[str, Any] | None) -> dict[str, float]:
    """The recipe's ``rewards`` mapping checked (known names, numbers >= 0, one positive score); None = defaults."""
    if mapping is None:
        return dict(DEFAULT_RL_WEIGHTS)
    known = (*EPISODE_COMPONENTS, *TURN_COMPONENTS, *PENALTIES)
    out: dict[str, float] = {}
    for name, weight in mapping.items():
        if name not in known:
            raise ValueError(f"unknown RL reward component {name!r}: use some of {', '.join(known)}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0:
            raise ValueError(f"the weight of {name!r} must be a number >= 0, got {weight!r}")
        out[name] = float(weight)
    if not any(out.get(n, 0) > 0 for n in (*EPISODE_COMPONENTS, *TURN_COMPONENTS)):
        raise ValueError("no score component has a positive weight: give checker_passed or complete_loop a weight")
    return out


def unscored_reason(facts: Any, metrics: Any) -> str | None:
    """Why the environment could not score the episode (its reward is then None), or None when it could."""
    # heavy: eval pulls fastapi/uvicorn (its endpoint); rewards stays light
    from harnessfit.eval.episode import UNSCORING_FLAGS

    if getattr(facts, "status", None) != "success" or metrics is None:
        return f"episode {getattr(facts, 'status', 'missing')}: {(getattr(facts, 'error', None) or '')[:200]}"
    if getattr(facts, "checker_exit_code", None) is None and getattr(facts, "reward", None) is None:
        return "the checker never ran"
    if metrics.integrity_flag in UNSCORING_FLAGS:
        return f"integrity: {metrics.integrity_flag}"
    return None


def episode_reward(
    facts: Any,
    metrics: Any,
    turn_values: dict[str, float | None],
    weights: dict[str, float],
    reasons: dict[str, str] | None = None,
) -> EpisodeReward:
    """The reward of one episode from the eval's facts and metrics, the per-turn component means and the judge's
    score (in ``turn_values`` under ``judge``); ``reasons`` says why a component is None (the judge's reason)."""
    why = unscored_reason(facts, metrics)
    names = [n for n in weights if weights[n] != 0]
    if why is not None:
        return EpisodeReward(None, {n: None for n in names}, why)
    values: dict[str, float | None] = {
        "checker_passed": float(metrics.checker_passed),
        "complete_loop": float(metrics.complete_loop),
        "turn_cap": -1.0 if metrics.turn_cap_hit else 0.0,
        "runaway": -1.0 if (metrics.runaway or metrics.timed_out) else 0.0,
        **turn_values,
    }
    num = den = penalty = 0.0
    for name in names:
        if name in TURN_COMPONENTS and name not in values:
            continue  # no rewarded turn: nothing to average
        value = values.get(name)
        if value is None:
            why = f"{name} is unscorable" + (f": {reasons[name]}" if reasons and reasons.get(name) else "")
            return EpisodeReward(None, {n: values.get(n) for n in names}, why)
        if name in PENALTIES:
            penalty += weights[name] * value
        else:
            num, den = num + weights[name] * value, den + weights[name]
    return EpisodeReward((num / den if den else 0.0) + penalty, {n: values.get(n) for n in names})


def turn_scores(
    reward_set: Any, turns: list[Any], tools: list[dict[str, Any]], names: list[str]
) -> dict[str, float | None]:
    """Mean over the rewarded turns of each per-turn component (``RewardSet``'s parse and the registry's
    functions on the captured ids); empty when no turn was rewarded (``episode_reward`` then leaves the per-turn
    components out of the mean — an absent turn is not an unscorable one)."""
    kept = [t for t in turns if t.rewarded]
    wanted = [n for n in names if n in TURN_COMPONENTS]
    if not kept or not wanted:
        return {}  # no turn to judge (the agent was stopped before the model answered): left out, not None
    samples = [reward_set.sample(t.completion, reference={}, tools=tools, dp_id=t.node_id) for t in kept]
    scored = reward_set.score(samples)
    out: dict[str, float | None] = {}
    for name in wanted:
        vals = [s.scores[name].value for s in scored]
        out[name] = None if any(v is None for v in vals) else sum(vals) / len(vals)
    return out


def group_advantages(rewards: list[float | None], scale: str = "group") -> list[float | None]:
    """Group-relative advantages (GRPO): reward minus the group's mean, divided by its std when ``scale`` is
    "group" (TRL's ``scale_rewards``). None rewards leave the group and get None; a group with fewer than two
    scored episodes gives no advantage to any."""
    scored = [r for r in rewards if r is not None]
    if len(scored) < 2:
        return [None] * len(rewards)
    mean = sum(scored) / len(scored)
    std = math.sqrt(sum((r - mean) ** 2 for r in scored) / (len(scored) - 1))  # torch.std: unbiased, as TRL
    div = std + 1e-4 if scale == "group" else 1.0
    return [None if r is None else (r - mean) / div for r in rewards]
