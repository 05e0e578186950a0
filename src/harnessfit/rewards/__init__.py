"""Rewards for GRPO on decision points: small registered components, combined with the recipe's weights.

Each component is a function ``(Sample, RewardContext) -> Score`` registered under a name with ``@component``.
Scores are numbers or ``None`` (unscorable: the judge had no usable verdict). The reward of one completion is

    weighted mean of its *score* components  +  sum of its weighted *penalty* components

so a recipe of only ``judge: 1.0`` gives the judge's 0–1 scale and the verifiable set stays on about the same
scale. If any weighted component is ``None`` the whole completion is ``None``: TRL (>= 1.6) then leaves it out of
its group's baseline and gives it no advantage, and the run counts it as unscorable — it is never scored 0.

Why one combined reward function for TRL instead of one per component: TRL sums the weighted components with
``nansum`` and calls a completion unscorable only when *every* function returned None, so a judge timeout beside
verifiable scores would silently count as a judge score of 0. Every component is still logged per completion
(``completions.jsonl``, TRL's completion table via ``log_extra``) and per step (``rewards/<name>/mean``).

Components (``harnessfit.rewards.verifiable`` and ``.judge``): ``format``, ``arguments_object``,
``schema_valid``, ``tool_active``, ``clean_end``, ``reference_match`` (ToolRL's graded match), ``length``
(penalty), ``judge``.

Why a top-level package rather than ``train.rewards``: GRPO (``train``) scores its groups with these components and
``serve --best-of`` ranks its candidates with the same ones; both import this package, which imports neither (only
``models.toolcalls``), so serve and train stay independent. Adding a reward is one decorated function in a module
listed in ``_MODULES``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Score",
    "Sample",
    "Component",
    "REGISTRY",
    "component",
    "components",
    "reward_weights",
    "DEFAULT_WEIGHTS",
    "JudgeSettings",
    "RewardSet",
    "combine",
]

DEFAULT_WEIGHTS: dict[str, float] = {
    "format": 1.0,
    "arguments_object": 0.5,
    "schema_valid": 1.0,
    "tool_active": 0.5,
    "clean_end": 0.5,
    "reference_match": 1.0,
    "length": 1.0,
}


@dataclass(frozen=True)
class Score:
    """One component's verdict on one completion: ``value`` None = unscorable; ``detail`` says why (short)."""

    value: float | None
    detail: str | None = None


@dataclass
class Sample:
    """One completion at one decision point, parsed once for every component.

    ``text`` is the completion as generated with special tokens kept and the final end-of-turn token removed;
    ``truncated`` means it hit the length cap without an end-of-turn token. ``calls`` are the ``<tool_call>``
    blocks that parse (``harnessfit.models.toolcalls``, the serving parser), ``broken_blocks`` those that do not,
    ``loose_calls`` call-shaped JSON written outside the tags, ``after_last_call`` the text after the last
    ``</tool_call>``. ``reference`` is the trace's next assistant turn, ``tools`` the schemas offered there.
    """

    text: str
    ids: list[int]
    truncated: bool
    content: str
    calls: list[Any]
    broken_blocks: int
    loose_calls: int
    unclosed_blocks: int
    after_last_call: str
    reference: dict[str, Any]
    tools: list[dict[str, Any]]
    state: list[dict[str, Any]] = field(default_factory=list)
    dp_id: str = ""
    judge: Any = None  # a judge Verdict, filled in before the components run

    @property
    def active_tools(self) -> list[str]:
        return [str((t.get("function") or {}).get("name")) for t in self.tools]

    @property
    def reference_calls(self) -> list[dict[str, Any]]:
        return list(self.reference.get("tool_calls") or [])


@dataclass
class RewardContext:
    """What components share: the harness card (validator), the format-error score, the over-long penalty."""

    card: Any
    format_error_reward: float = -1.0
    overlong_penalty: float = 0.0


@dataclass(frozen=True)
class Component:
    name: str
    kind: Literal["score", "penalty"]
    fn: Callable[[Sample, RewardContext], Score]
    help: str


REGISTRY: dict[str, Component] = {}
_MODULES = ("harnessfit.rewards.verifiable", "harnessfit.rewards.judge")


def component(name: str, *, kind: Literal["score", "penalty"] = "score"):
    """Register ``fn(sample, ctx) -> Score`` as reward component ``name`` (its docstring's first line is its help)."""

    def register(fn: Callable[[Sample, RewardContext], Score]):
        REGISTRY[name] = Component(name, kind, fn, (fn.__doc__ or "").strip().splitlines()[0])
        return fn

    return register


def components() -> dict[str, Component]:
    """Every registered component (imports the modules that define them)."""
    for mod in _MODULES:
        importlib.import_module(mod)
    return REGISTRY


def reward_weights(mapping: dict[str, Any] | None) -> dict[str, float]:
    """The recipe's ``rewards`` mapping checked: known names, numeric weights, at least one score component with
    a positive weight. ``None`` = ``DEFAULT_WEIGHTS``."""
    if mapping is None:
        return dict(DEFAULT_WEIGHTS)
    known = components()
    out: dict[str, float] = {}
    for name, weight in mapping.items():
        if name not in known:
            raise ValueError(f"unknown reward component {name!r}: use some of {', '.join(sorted(known))}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise ValueError(f"the weight of {name!r} must be a number, got {weight!r}")
        if weight < 0:
            raise ValueError(
                f"the weight of {name!r} is {weight}: weights are >= 0 (penalties are negative by themselves)"
            )
        out[name] = float(weight)
    if not any(w > 0 for n, w in out.items() if known[n].kind == "score"):
        raise ValueError(
            "no score component has a positive weight: give at least one of "
            f"{', '.join(sorted(n for n, c in known.items() if c.kind == 'score'))} a weight > 0"
        )
    return out


def combine(scores: dict[str, Score], weights: dict[str, float]) -> float | None:
    """The completion's reward (see the module docstring); None when any weighted component is None."""
    known = components()
    num = den = penalty = 0.0
    for name, weight in weights.items():
        if weight == 0:
            continue
        value = scores[name].value
        if value is None:
            return None
        if known[name].kind == "penalty":
            penalty += weight * value
        else:
            num += weight * value
            den += weight
    return (num / den if den else 0.0) + penalty


class JudgeSettings(BaseModel):
    """Where and how to ask the LLM judge (any OpenAI-compatible ``/chat/completions`` endpoint)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(None, description="Endpoint base URL ending in /v1, e.g. http://127.0.0.1:8000/v1.")
    model: str | None = Field(None, description="Model id the endpoint serves.")
    api_key_env: str | None = Field(
        "OPENAI_API_KEY",
        description="Environment variable holding the API key (unset or empty = no Authorization header).",
    )
    timeout_s: float = Field(60.0, gt=0, description="Seconds one verdict may take before it is unscorable.")
    concurrency: int = Field(8, ge=1, description="Verdicts requested at once.")
    retries: int = Field(1, ge=0, description="Extra tries after a timeout or a 5xx / connection error.")
    max_tokens: int = Field(400, ge=16, description="Output cap of one verdict.")
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature of the judge.")
    context_chars: int = Field(
        12000,
        ge=500,
        description="Characters of the conversation shown to the judge "
        "(the most recent ones; the system prompt is summarised as the tool list).",
    )


def __getattr__(name: str) -> Any:
    if name == "RewardSet":
        # reward_set imports this module's names, so it can only be imported once they are all defined
        from harnessfit.rewards.reward_set import RewardSet

        return RewardSet
    raise AttributeError(name)
