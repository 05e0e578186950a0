"""render_record: masks by incremental prefix rendering, and each planted violation kind is caught."""

from __future__ import annotations

import pytest

from _helpers.sft import SYSTEM, call, conversation_records, record
from harnessfit.core.records import SFTRecord
from harnessfit.models import load_tokenizer
from harnessfit.models.templates import chatml_tools_template
from harnessfit.tokens import MaskViolation, Problem, RecordError, render_many, render_record


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("embedded")


def _labels(tok, r) -> str:
    return tok.decode([i for i, m in zip(r.input_ids, r.assistant_masks, strict=True) if m], skip_special_tokens=False)


def _with_template(tok, text: str):
    clone = load_tokenizer("embedded")
    clone.chat_template = text
    return clone


def test_tool_call_action_is_exactly_the_supervised_span(tok) -> None:
    rec = SFTRecord(**conversation_records(3)[1])
    r = render_record(tok, rec)
    assert r.violations == []
    assert (
        _labels(tok, r) == '<tool_call>\n{"name": "read", "arguments": {"path": "src/f1.py"}}\n</tool_call><|im_end|>'
    )
    # everything before the action is prompt; the trailing newline after <|im_end|> is not trained
    assert r.assistant_masks[: r.n_prompt] == [0] * r.n_prompt
    assert r.assistant_masks[-1] == 0 and r.input_ids[-2] == tok.convert_tokens_to_ids("<|im_end|>")
    prompt = tok.decode(r.input_ids[: r.n_prompt])
    assert prompt.endswith("<|im_start|>assistant\n") and SYSTEM in prompt
    assert '"arguments": {"path": "src/f0.py"}' in prompt  # context calls rendered as objects too


def test_text_action_and_list_content(tok) -> None:
    recs = [SFTRecord(**r) for r in conversation_records(2)]
    out = render_many(tok, recs)
    assert all(not isinstance(o, RecordError) and o.violations == [] for o in out)
    assert _labels(tok, out[-1]) == "Done: the bug is fixed.<|im_end|>"
    assert "Fix the bug in g1." in out[0].text


def test_fast_and_full_verifier_agree(tok) -> None:
    recs = [SFTRecord(**r) for r in conversation_records(6)]
    fast = render_many(tok, recs)
    full = render_many(tok, recs, verify="full")
    assert [(o.input_ids, o.assistant_masks, o.violations) for o in fast] == [
        (o.input_ids, o.assistant_masks, o.violations) for o in full
    ]


def test_empty_action_is_a_problem_not_a_crash(tok) -> None:
    rec = SFTRecord(
        **record(
            "e1",
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}],
            {"role": "assistant", "content": None},
        )
    )
    with pytest.raises(RecordError) as err:
        render_record(tok, rec)
    assert err.value.problem is Problem.empty_action


def test_planted_double_encoded_arguments(tok) -> None:
    rec = SFTRecord(
        **record(
            "d1",
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}],
            {"role": "assistant", "content": None, "tool_calls": [call("c1", "read", '"{\\"path\\":\\"a.txt\\"}"')]},
        )
    )
    r = render_record(tok, rec)
    assert MaskViolation.double_encoded_arguments in r.violations
    assert '"arguments": "{\\"path' in r.text


@pytest.mark.slow
def test_planted_think_in_labels(tok) -> None:
    # a template that writes a thought into every assistant turn
    thinking = chatml_tools_template().replace(
        "{%- generation %}", "{%- generation %}{{- '\\n<think>\\nplan first\\n</think>' }}"
    )
    rec = SFTRecord(**conversation_records(1)[0])
    r = render_record(_with_template(tok, thinking), rec)
    assert MaskViolation.think_in_labels in r.violations
    assert (
        MaskViolation.think_in_labels
        not in render_record(_with_template(tok, thinking), rec, think_in_labels=True).violations
    )
    # an empty think pair (Qwen3's "no thinking" marker) carries no thought: allowed
    empty = chatml_tools_template().replace("{%- generation %}", "{%- generation %}{{- '\\n<think>\\n\\n</think>' }}")
    assert MaskViolation.think_in_labels not in render_record(_with_template(tok, empty), rec).violations
    # a thought in the middle of the data's text is caught
    mid = dict(conversation_records(1)[0])
    mid["action"] = {"role": "assistant", "content": "Reading it. <think>the user is wrong</think> Done."}
    assert MaskViolation.think_in_labels in render_record(tok, SFTRecord(**mid)).violations
    # thinking in the data is dropped from labels unless asked for
    data = dict(conversation_records(1)[0])
    data["action"] = {**data["action"], "reasoning_content": "I should read f0."}
    plain = render_record(tok, SFTRecord(**data))
    assert plain.violations == [] and "I should read" not in plain.text
    asked = render_record(tok, SFTRecord(**data), think_in_labels=True)
    assert "<think>\nI should read f0.\n</think>" in _labels(tok, asked)


def test_planted_missing_end_of_turn(tok) -> None:
    # assistant turns closed with a plain newline instead of <|im_end|>: the model would never learn to stop
    broken = chatml_tools_template().replace(
        "{{- '<|im_end|>\\n' }}\n        {%- endif %}\n        {%- endgeneration %}",
        "{{- '\\n' }}\n        {%- endif %}\n        {%- endgeneration %}",
    )
    assert broken != chatml_tools_template()
    r = render_record(_with_template(tok, broken), SFTRecord(**conversation_records(1)[0]))
    assert MaskViolation.missing_end_of_turn in r.violations


def test_planted_prompt_in_loss(tok) -> None:
    # no generation prompt: the assistant header, rendered outside {% generation %}, lands in the diff
    no_gen_prompt = chatml_tools_template().replace("{{- '<|im_start|>assistant\\n' }}", "{{- '' }}")
    assert no_gen_prompt != chatml_tools_template()
    r = render_record(_with_template(tok, no_gen_prompt), SFTRecord(**conversation_records(1)[0]))
    assert MaskViolation.prompt_in_loss in r.violations
    assert "<|im_start|>assistant" in _labels(tok, r)


def test_planted_prefix_instability(tok) -> None:
    # the system turn mentions how many messages follow, so the prefix renders differently from the whole
    unstable = chatml_tools_template().replace(
        "{{- messages[0]['content'] }}", "{{- messages[0]['content'] + ' (' + messages|length|string + ')' }}"
    )
    r = render_record(_with_template(tok, unstable), SFTRecord(**conversation_records(1)[0]))
    assert MaskViolation.prefix_unstable in r.violations and MaskViolation.prompt_in_loss in r.violations


def test_template_error_is_a_problem(tok) -> None:
    crashing = "{{ raise_exception('no tools for you') }}"
    with pytest.raises(RecordError) as err:
        render_record(_with_template(tok, crashing), SFTRecord(**conversation_records(1)[0]))
    assert err.value.problem is Problem.render_error and "no tools for you" in str(err.value)
