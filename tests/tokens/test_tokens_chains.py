"""Chains: the fast path equals the definition (per-action renders compared action by action), and a chain breaks
exactly where a planted template, a rewritten history or a token seam makes the next render stop extending the last.
"""

from __future__ import annotations

import numpy as np
import pytest

from _helpers.sft import SYSTEM, TOOLS, call, conversation_records
from harnessfit.core.records import SFTRecord
from harnessfit.models import load_tokenizer
from harnessfit.models.templates import chatml_tools_template
from harnessfit.tokens.chains import BreakReason, ChainBreak, chain_records, chain_run, split_runs
from harnessfit.tokens.render import RecordError, render_record


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("embedded")


def _with_template(tok, text: str):
    t = load_tokenizer("embedded")
    t.chat_template = text
    return t


def _key(x):
    return (x.problem.value, str(x)) if isinstance(x, RecordError) else x


def _same(tok, records: list[SFTRecord]):
    """Fast path and definition agree on every action, chain (token ids included) and break; returns them."""
    fast = chain_records(tok, records)
    plain = chain_records(tok, records, fast=False)
    assert {k: _key(v) for k, v in fast[0].items()} == {k: _key(v) for k, v in plain[0].items()}
    assert [c.actions for c in fast[1]] == [c.actions for c in plain[1]]
    assert all(np.array_equal(a.input_ids, b.input_ids) for a, b in zip(fast[1], plain[1], strict=True))
    assert fast[2] == plain[2]
    return fast


def _two_user_turns(group: str = "u") -> list[SFTRecord]:
    """sys, user, a0 (text + call), tool, a1 (call), tool, user again, a2 (text + call), tool, a3 (answer)."""
    msgs: list[dict] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Fix the bug."}]
    acts = [
        {
            "role": "assistant",
            "content": "Reading the file first.",
            "tool_calls": [call("c0", "read", '{"path":"a.py"}')],
        },
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "read", '{"path":"b.py"}')]},
        {"role": "assistant", "content": "Now the test.", "tool_calls": [call("c2", "bash", '{"command":"pytest"}')]},
        {"role": "assistant", "content": "Fixed and tested."},
    ]
    out = []
    for i, act in enumerate(acts):
        out.append(
            SFTRecord(
                id=f"{group}-{i}",
                conversation_id=group,
                split="train",
                action_index=i,
                messages=list(msgs),
                tools=TOOLS,
                action=act,
                source="pi",
                group=group,
            )
        )
        msgs.append(act)
        if act.get("tool_calls"):
            msgs.append({"role": "tool", "content": f"output {i}", "tool_call_id": f"c{i}"})
        if i == 1:
            msgs.append({"role": "user", "content": "Also run the tests."})
    return out


def test_one_chain_per_conversation_equals_its_records(tok) -> None:
    records = [SFTRecord(**r) for r in conversation_records(4, group="g1") + conversation_records(2, group="g2")]
    _by_id, chains, breaks = _same(tok, records)
    assert [[a.id for a in c.actions] for c in chains] == [[r.id for r in records[:5]], [r.id for r in records[5:]]]
    assert breaks == []
    for chain in chains:
        for a in chain.actions:  # each action's span and length are exactly its own record's
            alone = render_record(tok, next(r for r in records if r.id == a.id))
            assert alone.input_ids == chain.input_ids[: a.length].tolist()
            assert alone.assistant_masks == [0] * a.start + [1] * (a.end - a.start) + [0] * (a.length - a.end)
        assert chain.n_tokens == chain.actions[-1].length < chain.record_tokens


def test_planted_template_that_rewrites_earlier_turns_breaks_at_the_right_action(tok) -> None:
    # Qwen3-style: assistant text before the last user message is dropped once a later user message exists
    text = chatml_tools_template()
    text = text.replace(
        "{%- for message in messages %}",
        "{%- set ns = namespace(last_user=-1) %}"
        "{%- for m in messages %}{%- if m.role == 'user' %}{%- set ns.last_user = loop.index0 %}"
        "{%- endif %}{%- endfor %}\n{%- for message in messages %}",
        1,
    )
    text = text.replace("{%- if message.content %}", "{%- if message.content and loop.index0 > ns.last_user %}")
    assert text != chatml_tools_template()
    planted = _with_template(tok, text)
    records = _two_user_turns()
    by_id, chains, breaks = _same(planted, records)
    assert all(not v.violations for v in by_id.values())  # every action is fine as its own record
    assert [[a.id for a in c.actions] for c in chains] == [["u-0", "u-1"], ["u-2", "u-3"]]
    assert breaks == [ChainBreak("u-1", "u-2", BreakReason.render_rewritten)]
    # the unplanted template keeps the whole trajectory in one chain
    assert [[a.id for a in c.actions] for c in _same(tok, records)[1]] == [["u-0", "u-1", "u-2", "u-3"]]


def test_rewritten_history_starts_a_new_run(tok) -> None:
    records = [SFTRecord(**r) for r in conversation_records(3, group="g1")]
    compacted = records[2].model_copy(
        update={"messages": [records[2].messages[0], {"role": "user", "content": "Summary of the work so far."}]}
    )
    records = [records[0], records[1], compacted, records[3]]
    assert [len(run) for run, _ in split_runs(records)] == [2, 1, 1]
    _by_id, chains, breaks = _same(tok, records)
    assert [[a.id for a in c.actions] for c in chains] == [["g1-000", "g1-001"], ["g1-002"], ["g1-003"]]
    assert breaks == [
        ChainBreak("g1-001", "g1-002", BreakReason.history_rewritten),
        ChainBreak("g1-002", "g1-003", BreakReason.history_rewritten),
    ]


def test_tokens_merging_across_the_seam_break_the_chain(tok) -> None:
    # after each assistant turn the template writes "the"; a following tool turn begins with "re": "there" is one
    # token, so the earlier render's tokens are not a prefix of the next render's although its text is
    text = chatml_tools_template().replace("{%- endgeneration %}", "{%- endgeneration %}\n        {{- 'the' }}")
    text = text.replace("{{- '<|im_start|>user' }}", "{{- 're<|im_start|>user' }}")
    planted = _with_template(tok, text)
    assert (
        planted("\nthere", add_special_tokens=False)["input_ids"]
        != planted("\nthe", add_special_tokens=False)["input_ids"]
        + planted("re", add_special_tokens=False)["input_ids"]
    )
    records = [SFTRecord(**r) for r in conversation_records(2, group="g1")]
    by_id, chains, breaks = _same(planted, records)
    assert all(not v.violations for v in by_id.values())
    assert [len(c.actions) for c in chains] == [1, 1, 1]
    assert [b.reason for b in breaks] == [BreakReason.token_seam] * 2
    run = next(run for run, _ in split_runs(records))
    assert chain_run(planted, run).fallback  # the fast path hands such a run to the definition


def test_cut_keeps_exactly_the_actions_whose_records_fit(tok) -> None:
    records = [SFTRecord(**r) for r in conversation_records(4, group="g1")]
    (chain,) = chain_records(tok, records)[1]
    lengths = [a.length for a in chain.actions]
    assert lengths == sorted(lengths)
    cut = chain.cut(lengths[2])
    assert [a.id for a in cut.actions] == [a.id for a in chain.actions[:3]] and cut.n_tokens == lengths[2]
    assert np.array_equal(cut.input_ids, chain.input_ids[: lengths[2]])
    assert chain.cut(lengths[2] - 1).actions == chain.actions[:2]
    assert chain.cut(lengths[0] - 1) is None and chain.cut(None) is chain


def test_actions_that_cannot_be_trained_stay_unsupervised_inside_the_chain(tok) -> None:
    records = [SFTRecord(**r) for r in conversation_records(3, group="g1")]
    bad = records[1].action | {"tool_calls": [call("x", "read", '"{\\"path\\":\\"x\\"}"')]}  # double-encoded
    records = [records[0], records[1].model_copy(update={"action": bad})]
    later = conversation_records(3, group="g1")[2]
    later["messages"][len(records[1].messages)] = bad
    records.append(SFTRecord(**later))
    by_id, chains, breaks = _same(tok, records)
    assert by_id["g1-001"].violations and not by_id["g1-002"].violations
    assert [[a.id for a in c.actions] for c in chains] == [["g1-000", "g1-002"]] and breaks == []
