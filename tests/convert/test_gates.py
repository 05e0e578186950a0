"""Gates: the ordered list is the contract, adding a gate is one class and one list entry, findings say which step
they are at and where the exact prefix ends; UI-only turns go whole, and nothing is merged."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from _helpers.claude_steps import read_steps
from harnessfit.convert import convert_trajectory, gates, to_conversation, validate_conversation
from harnessfit.convert.builder import build_draft
from harnessfit.convert.draft import Draft
from harnessfit.convert.gates import GATES, Gate, GateFinding, split_gates
from harnessfit.core import Conversation, Provenance, Reason, Rejection, Step, ToolCall, Trajectory
from harnessfit.harness.card import load_card

CARD = load_card("pi", "0.73.1")


def _traj(steps: list[Step], source: str = "claude_code", flags: tuple[str, ...] = ()) -> Trajectory:
    return Trajectory(
        id="t1",
        source=source,
        steps=steps,
        cwd="/w",
        date="2026-01-02",
        root_request_id="r",
        flags=list(flags),
        provenance=Provenance(format=source, file="f.jsonl", sha256="0" * 64),
    )


def _todo(cid: str, text: str | None) -> list[Step]:
    """An assistant turn whose only call is TodoWrite (dropped: it changes nothing), and its result."""
    return [
        Step(role="assistant", text=text, tool_calls=[ToolCall(id=cid, name="TodoWrite", arguments={"todos": []})]),
        Step(role="tool", tool_call_id=cid, text="Todos have been modified successfully."),
    ]


def test_the_order_is_the_contract() -> None:
    assert [g.name for g in GATES] == [
        "lines_lost",
        "truncated_file",
        "empty",
        "side_branch",
        "subagent",
        "foreign_tools",
        "mapping_failed",
        "harness_version_mismatch",
        "invalid_call",
        "orphan_tool_result",
        "turn_after_answer",
        "missing_tool_result",
        "user_rejected_tool",
        "image_content",
        "no_final_response",
    ]
    before, after = split_gates(GATES)
    assert all(g.before_build for g in before) and not any(g.before_build for g in after)
    with pytest.raises(ValueError, match="must come first"):
        split_gates((*after, *before))


def test_ui_only_turns_are_dropped_whole_and_nothing_is_merged() -> None:
    """A turn whose only content is a UI-only call goes with its result; the turns around it stay as they were."""
    steps = [
        Step(role="user", text="Plan it, then do it."),
        *_todo("a", None),
        *_todo("b", None),
        *read_steps("c", "ls.txt", "x.py", text="C."),
        Step(role="assistant", text="Done."),
    ]
    conv = to_conversation(_traj(steps), CARD)
    assert isinstance(conv, Conversation), conv
    assert [(m["role"], m.get("content")) for m in conv.messages[1:]] == [
        ("user", [{"type": "text", "text": "Plan it, then do it."}]),
        ("assistant", "C."),
        ("tool", "x.py"),
        ("assistant", "Done."),
    ]
    assert "drop:ui_only:TodoWrite" in conv.meta.transformations
    assert not any("merge" in t for t in conv.meta.transformations)
    assert validate_conversation(conv, CARD) == []


def test_a_ui_call_beside_text_blocks_and_the_actions_before_it_are_labels() -> None:
    steps = [
        Step(role="user", text="Go."),
        *read_steps("b", "pwd.txt", "/w"),
        *_todo("a", "Planning."),  # 1-2, 3-4
        *read_steps("c", "ls.txt", "x.py"),
        Step(role="assistant", text="In /w."),
    ]
    out = convert_trajectory(_traj(steps), CARD)
    assert isinstance(out.record, Rejection) and out.record.reason == Reason.ui_only_call
    assert "also holds text" in out.record.detail
    assert out.calls.fates == ["label", "ui_only_call", "ui_only_call"]
    assert (out.record.calls, out.record.labels) == (3, 1)
    prefix = out.prefix
    assert prefix is not None and prefix.meta.prefix.step == 3 and prefix.meta.prefix.labels == 1
    assert [m["role"] for m in prefix.messages] == ["system", "user", "assistant", "tool"]
    assert validate_conversation(prefix, CARD) == []


def test_a_turn_right_after_an_answer_is_no_label() -> None:
    """Pi starts a run only with a user message: an answer followed at once by another turn is not a Pi context."""
    steps = [
        Step(role="user", text="Go."),
        Step(role="assistant", text="Sure, later."),  # 1: an answer
        *read_steps("c", "ls.txt", "x.py"),
        Step(role="assistant", text="Done."),
    ]  # 2: a turn right after it
    out = convert_trajectory(_traj(steps), CARD)
    assert isinstance(out.record, Rejection) and out.record.reason == Reason.turn_after_answer
    assert out.calls.fates == ["turn_after_answer"]
    assert out.prefix is not None and [m["role"] for m in out.prefix.messages] == ["system", "user", "assistant"]


def test_findings_name_their_step_and_the_first_gate_decides() -> None:
    steps = [
        Step(role="user", text="Look."),  # 0
        Step(role="assistant", tool_calls=[ToolCall(id="w", name="WebFetch", arguments={"url": "u"})]),  # 1
        Step(role="tool", tool_call_id="w", text="page"),  # 2
        Step(role="tool", tool_call_id="zz", text="stray"),  # 3: answers no call of its turn
        Step(role="assistant", text="Read it."),
    ]
    traj = _traj(steps)
    rej = to_conversation(traj, CARD)
    assert isinstance(rej, Rejection) and rej.reason == Reason.unsupported_tool  # mapping_failed before orphans
    draft = build_draft(traj, CARD)  # the builder alone: its notes, before any gate decides
    found = {g.name: [(f.step, f.reason) for f in g.findings(draft)] for g in GATES[6:]}
    assert found["mapping_failed"] == [(1, Reason.unsupported_tool)]
    assert found["orphan_tool_result"] == [(3, Reason.orphan_tool_result)]


class GaveUp(Gate):
    """An answer that says the agent gave up is not a demonstration to learn from."""

    name = "gave_up"

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        for i, step in enumerate(draft.trajectory.steps):
            if step.role == "assistant" and "I give up" in (step.text or ""):
                yield GateFinding(i, Reason.aborted_or_error_turn, "the agent gave up", "keep only finished runs")


def test_adding_a_gate_is_one_class_and_one_list_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = [
        Step(role="user", text="Fix it."),
        *read_steps("b", "make.log", "error"),
        Step(role="assistant", text="I give up."),
    ]
    assert isinstance(to_conversation(_traj(steps), CARD), Conversation)
    monkeypatch.setattr(gates, "GATES", (*GATES[:-1], GaveUp(), GATES[-1]))  # the one entry
    rej = to_conversation(_traj(steps), CARD)
    assert isinstance(rej, Rejection)
    assert (rej.reason, rej.detail) == (Reason.aborted_or_error_turn, "the agent gave up")
    assert rej.record_id == "t1" and rej.file == "f.jsonl"


def test_a_mapping_failure_of_any_reason_rejects() -> None:
    """The mapping_failed gate takes every reason a mapping gives, including ``subagent`` (Codex spawn_agent)."""
    steps = [
        Step(role="user", text="Split the work."),
        Step(role="assistant", tool_calls=[ToolCall(id="s", name="spawn_agent", arguments='{"task": "x"}')]),
        Step(role="tool", tool_call_id="s", text="agent 7 started"),
        Step(role="assistant", text="Started."),
    ]
    rej = to_conversation(_traj(steps, source="codex"), CARD)
    assert isinstance(rej, Rejection) and rej.reason == Reason.subagent and "spawn_agent" in rej.detail
