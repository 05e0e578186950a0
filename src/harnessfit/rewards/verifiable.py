"""Harness-verifiable reward components: what the harness card can check without a judge.

The tool-call format is the training template's (Hermes/ChatML ``<tool_call>{"name": …, "arguments": {…}}
</tool_call>``), parsed by ``harnessfit.models.toolcalls`` — the parser the server uses, so a completion scores as
what Pi would receive. Schemas and "tool exists and is active" come from the card's validator
(``HarnessCard.validate_call``, Pi's own checks emulated), with the tools offered at the decision point as the
active set.

``reference_match`` grades the calls against the trace's next turn as ToolRL does (Qian et al. 2025, "ToolRL:
Reward is All Tool Learning Needs", correctness reward): a frequency-aware Jaccard overlap of the tool names, and
for each reference call the best unused predicted call of the same name scores the Jaccard overlap of its argument
keys plus one per argument value equal to the reference's; the sum over the maximum ``1 + Σ(1 + #args)`` gives
0–1 (ToolRL maps it to [-3, 3]; here weights do the scaling). A reference turn without calls expects none:
names of both are empty, which is an exact match (1.0), and any call scores 0.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from harnessfit.models.toolcalls import split_tool_calls
from harnessfit.rewards import RewardContext, Sample, Score, component

__all__ = ["parse_completion", "call_problems", "is_valid_call_turn", "match_score", "toolrl_match"]

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_LOOSE_CALL = re.compile(r'\{\s*"name"\s*:\s*"[^"]*"\s*,\s*"(?:arguments|parameters)"\s*:')


def parse_completion(
    text: str,
    ids: list[int],
    truncated: bool,
    *,
    reference: dict[str, Any] | None = None,
    tools: list[dict[str, Any]] | None = None,
    state: list[dict[str, Any]] | None = None,
    dp_id: str = "",
) -> Sample:
    """A ``Sample`` from a completion's text (special tokens kept, end-of-turn token removed) and ids."""
    content, calls = split_tool_calls(text)
    after = text.rsplit(_CLOSE, 1)[1] if calls and _CLOSE in text else ""
    opened, closed = text.count(_OPEN), text.count(_CLOSE)
    return Sample(
        text=text,
        ids=list(ids),
        truncated=truncated,
        content=content,
        calls=calls,
        broken_blocks=content.count(_OPEN),
        loose_calls=len(_LOOSE_CALL.findall(content)),
        unclosed_blocks=max(0, opened - closed),
        after_last_call=after,
        reference=reference or {},
        tools=tools or [],
        state=state or [],
        dp_id=dp_id,
    )


def _arguments(call: Any) -> Any:
    try:
        return json.loads(call.arguments)
    except ValueError:
        return None


def call_problems(card: Any, sample: Sample) -> list[list[str]]:
    """Per call, the error codes the card's validator finds (``[]`` = Pi would run it as written or repaired)."""
    out = []
    for call in sample.calls:
        violations = card.validate_call(call.name, call.arguments, active_tools=sample.active_tools)
        out.append([str(v.code) for v in violations if v.severity == "error"])
    return out


def is_valid_call_turn(card: Any, sample: Sample) -> bool:
    """At least one call, no broken block, and every call passes the card's validator: a turn Pi runs as is."""
    if not sample.calls or sample.broken_blocks or sample.loose_calls:
        return False
    return all(not p for p in call_problems(card, sample))


def _vacuous(sample: Sample) -> Score:
    """No call was made: nothing to check, which is right only when the reference turn made none either."""
    expected = bool(sample.reference_calls)
    return Score(0.0 if expected else 1.0, "no call (reference calls a tool)" if expected else "no call, none expected")


@component("format")
def format_reward(sample: Sample, ctx: RewardContext) -> Score:
    """Tool calls are written in the template's format: no broken <tool_call> block, no call outside one."""
    if sample.broken_blocks:
        return Score(ctx.format_error_reward, f"{sample.broken_blocks} <tool_call> block(s) do not parse")
    if sample.loose_calls:
        return Score(ctx.format_error_reward, "a call written outside <tool_call> tags")
    return Score(1.0)


@component("arguments_object")
def arguments_object(sample: Sample, ctx: RewardContext) -> Score:
    """Share of calls whose arguments are a JSON object (not a JSON string holding one: double encoding)."""
    if not sample.calls:
        return _vacuous(sample)
    good, why = 0, []
    for call in sample.calls:
        value = _arguments(call)
        if isinstance(value, dict):
            good += 1
        elif isinstance(value, str) and isinstance(_safe_json(value), dict):
            why.append(f"{call.name}: double-encoded")
        else:
            why.append(f"{call.name}: arguments are {type(value).__name__ if value is not None else 'not JSON'}")
    return Score(good / len(sample.calls), "; ".join(why) or None)


def _safe_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


@component("schema_valid")
def schema_valid(sample: Sample, ctx: RewardContext) -> Score:
    """Share of calls the card's validator accepts (the tool's schema, as Pi checks it)."""
    if not sample.calls:
        return _vacuous(sample)
    problems = call_problems(ctx.card, sample)
    bad = [f"{c.name}: {','.join(p)}" for c, p in zip(sample.calls, problems, strict=True) if p]
    return Score(1 - len(bad) / len(sample.calls), "; ".join(bad) or None)


@component("tool_active")
def tool_active(sample: Sample, ctx: RewardContext) -> Score:
    """Share of calls naming a tool that exists in the card and is active at this point."""
    if not sample.calls:
        return _vacuous(sample)
    known = set(ctx.card.tool_names())
    active = set(sample.active_tools)
    bad = [c.name for c in sample.calls if c.name not in known or c.name not in active]
    return Score(1 - len(bad) / len(sample.calls), ("not active: " + ", ".join(bad)) if bad else None)


@component("clean_end")
def clean_end(sample: Sample, ctx: RewardContext) -> Score:
    """The turn ends with the end-of-turn token, every block is closed, and nothing follows the last call."""
    if sample.truncated:
        return Score(0.0, "no end-of-turn token (hit the length cap)")
    if sample.unclosed_blocks:
        return Score(0.0, "a <tool_call> block is not closed")
    if sample.calls and sample.after_last_call.strip():
        return Score(0.0, "text after the last call")
    return Score(1.0)


def match_score(a: list[Any], b: list[Any]) -> float:
    """Frequency-aware Jaccard overlap of two lists (order ignored); two equal lists (both empty too) score 1."""
    if Counter(a) == Counter(b):
        return 1.0
    if not a or not b:
        return 0.0
    ca, cb = Counter(a), Counter(b)
    inter = sum(min(ca[k], cb[k]) for k in ca.keys() & cb.keys())
    return inter / (len(a) + len(b) - inter)


def _reference_pairs(turn: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for call in turn.get("tool_calls") or []:
        fn = call.get("function") or {}
        args = fn.get("arguments")
        if isinstance(args, str):
            args = _safe_json(args)
        out.append((str(fn.get("name")), args if isinstance(args, dict) else {}))
    return out


def toolrl_match(reference: list[tuple[str, dict[str, Any]]], predicted: list[tuple[str, dict[str, Any]]]) -> float:
    """ToolRL's graded match of predicted calls against reference calls, 0–1 (see the module docstring)."""
    if reference == predicted:
        return 1.0
    score = match_score([n for n, _ in reference], [n for n, _ in predicted])
    best_possible = 1.0
    used: set[int] = set()
    for name, args in reference:
        best_possible += 1.0 + len(args)
        best, best_i = 0.0, -1
        for i, (p_name, p_args) in enumerate(predicted):
            if i in used or p_name != name:
                continue
            keys = match_score(list(args), list(p_args))
            values = sum(1.0 for k, v in args.items() if k in p_args and p_args[k] == v)
            if keys + values > best:
                best, best_i = keys + values, i
        if best_i >= 0:
            used.add(best_i)
            score += best
    return score / best_possible


@component("reference_match")
def reference_match(sample: Sample, ctx: RewardContext) -> Score:
    """ToolRL's graded match with the trace's next turn: tool names, argument keys and values."""
    predicted = []
    for call in sample.calls:
        args = _arguments(call)
        predicted.append((call.name, args if isinstance(args, dict) else {}))
    value = toolrl_match(_reference_pairs(sample.reference), predicted)
    return Score(value)


@component("length", kind="penalty")
def length(sample: Sample, ctx: RewardContext) -> Score:
    """Minus overlong_penalty for a completion that hit the length cap without ending its turn (0 otherwise)."""
    if sample.truncated:
        return Score(-ctx.overlong_penalty if ctx.overlong_penalty else 0.0, "over-long")
    return Score(0.0)
