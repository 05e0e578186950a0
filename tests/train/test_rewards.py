"""Each harness-verifiable reward component: a clean completion passes, the planted defect is caught; ToolRL's
graded match; the combination rule (weighted mean + penalties, one None makes the completion unscorable)."""

from __future__ import annotations

import json

import pytest
from grpo_fixtures import card_tools

from harnessfit.harness.card import load_card
from harnessfit.rewards import REGISTRY, RewardContext, Score, combine, components, reward_weights
from harnessfit.rewards.verifiable import parse_completion, toolrl_match

CARD = load_card()
TOOLS = card_tools(("read", "bash"))
READ_REF = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"type": "function", "function": {"name": "read", "arguments": {"path": "a.txt"}}}],
}
TEXT_REF = {"role": "assistant", "content": "It prints hello."}


def call(name: str, args) -> str:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


def score(name: str, text: str, *, reference=READ_REF, truncated=False, ctx=None) -> Score:
    sample = parse_completion(text, [], truncated, reference=reference, tools=TOOLS)
    return components()[name].fn(sample, ctx or RewardContext(card=CARD))


CLEAN = call("read", {"path": "a.txt"})


def test_a_clean_call_passes_every_component() -> None:
    for name in ("format", "arguments_object", "schema_valid", "tool_active", "clean_end", "reference_match"):
        assert score(name, CLEAN).value == 1.0, name
    assert score("length", CLEAN).value == 0.0


def test_format_catches_broken_blocks_and_calls_outside_tags_with_the_configured_negative() -> None:
    ctx = RewardContext(card=CARD, format_error_reward=-0.5)
    broken = '<tool_call>\n{"name": "read", "arguments": {"path": }\n</tool_call>'
    assert score("format", broken, ctx=ctx).value == -0.5
    loose = 'I will read it: {"name": "read", "arguments": {"path": "a.txt"}}'
    assert score("format", loose, ctx=ctx) == Score(-0.5, "a call written outside <tool_call> tags")
    assert score("format", "It prints hello.", reference=TEXT_REF).value == 1.0


def test_arguments_object_catches_double_encoding() -> None:
    double = call("read", json.dumps(json.dumps({"path": "a.txt"})))
    s = score("arguments_object", double)
    assert s.value == 0.0 and "double-encoded" in s.detail
    assert score("arguments_object", call("read", "[1, 2]")).value == 0.0
    two = CLEAN + "\n" + double
    assert score("arguments_object", two).value == 0.5


def test_schema_valid_uses_the_cards_validator() -> None:
    s = score("schema_valid", call("read", {"file": "a.txt"}))  # read requires path
    assert s.value == 0.0 and "missing_required" in s.detail
    s = score("schema_valid", call("bash", {"command": ["ls"]}))
    assert s.value == 0.0 and "wrong_type" in s.detail
    assert score("schema_valid", call("bash", {"command": 5})).value == 1.0  # Pi coerces it to "5" and runs it
    assert score("schema_valid", call("bash", {"command": "ls"})).value == 1.0


def test_tool_active_catches_unknown_and_inactive_tools() -> None:
    assert score("tool_active", call("search", {"q": "x"})).value == 0.0  # not a Pi tool
    s = score("tool_active", call("write", {"path": "a", "content": "b"}))  # a Pi tool, not offered here
    assert s.value == 0.0 and "write" in s.detail


def test_clean_end_catches_truncation_text_after_the_call_and_unclosed_blocks() -> None:
    assert score("clean_end", CLEAN, truncated=True).value == 0.0
    assert score("clean_end", CLEAN + "\nNow I wait.").value == 0.0
    unclosed = '<tool_call>\n{"name": "read", "arguments": {"path": "a.txt"}}'
    assert score("clean_end", unclosed).value == 0.0
    assert score("clean_end", "It prints hello.", reference=TEXT_REF).value == 1.0


def test_reference_match_is_toolrls_graded_match() -> None:
    assert score("reference_match", CLEAN).value == 1.0
    # same tool, wrong value: names 1 + keys 1 + values 0 over 1 + (1 + 1 args) = 2/3
    assert score("reference_match", call("read", {"path": "b.txt"})).value == pytest.approx(2 / 3)
    assert score("reference_match", call("bash", {"command": "cat a.txt"})).value == 0.0
    assert score("reference_match", "It prints hello.", reference=TEXT_REF).value == 1.0  # no call expected, none made
    assert score("reference_match", CLEAN, reference=TEXT_REF).value == 0.0
    assert score("reference_match", "Let me look.").value == 0.0  # a call was expected
    # two reference calls, one matched exactly: names 1/2 + (1 + 1) for read over 1 + 2 + 2
    ref = [("read", {"path": "a.txt"}), ("bash", {"command": "ls"})]
    assert toolrl_match(ref, [("read", {"path": "a.txt"})]) == pytest.approx((0.5 + 2) / 5)


def test_length_penalty_only_for_overlong() -> None:
    ctx = RewardContext(card=CARD, overlong_penalty=0.3)
    assert score("length", CLEAN, truncated=True, ctx=ctx) == Score(-0.3, "over-long")
    assert score("length", CLEAN, ctx=ctx).value == 0.0


def test_combine_weighted_mean_plus_penalties_and_none() -> None:
    scores = {"format": Score(1.0), "reference_match": Score(0.5), "length": Score(-0.3), "judge": Score(None)}
    assert combine(scores, {"format": 1.0, "reference_match": 3.0, "length": 1.0}) == pytest.approx(
        (1.0 + 1.5) / 4 - 0.3
    )
    assert combine(scores, {"format": 1.0, "judge": 1.0}) is None  # one unscorable component: the completion is
    assert combine(scores, {"format": 1.0, "judge": 0.0}) == 1.0  # a zero weight is not asked for
    assert set(reward_weights(None)) <= set(REGISTRY)


def test_reward_set_decodes_ids_and_sees_the_end_of_turn(tmp_path) -> None:
    from harnessfit.models import load_tokenizer
    from harnessfit.rewards.reward_set import RewardSet

    tok = load_tokenizer("smollm2-135m")
    eot = tok.convert_tokens_to_ids("<|im_end|>")
    rs = RewardSet(
        reward_weights(None), tokenizer=tok, stop_ids=[eot], card=CARD, log_path=tmp_path / "c.jsonl", num_generations=2
    )
    ended = tok(CLEAN, add_special_tokens=False)["input_ids"] + [eot]
    cut = tok(CLEAN[:-5], add_special_tokens=False)["input_ids"]
    ref, tools = json.dumps(READ_REF), json.dumps(TOOLS)
    out = rs(
        prompts=["p", "p"],
        completions=["", ""],
        completion_ids=[ended, cut],
        dp_id=["d", "d"],
        tools=[tools, tools],
        reference=[ref, ref],
    )
    rows = [json.loads(x) for x in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert rows[0]["truncated"] is False and rows[0]["valid_call"] and out[0] == pytest.approx(1.0)
    assert rows[1]["truncated"] is True and rows[1]["components"]["clean_end"] == 0.0 and out[1] < out[0]
    assert [r["group"] for r in rows] == [0, 0] and rows[0]["step"] == 1
