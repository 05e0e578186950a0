"""Pi sessions: v1 linear, v3 trees (active branch + side branches), bashExecution, legacy edits, aborted turns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessfit.convert import to_conversation, validate_conversation
from harnessfit.core import Conversation, Reason, Rejection
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.pi.reader import PiReader
from harnessfit.harness.card import load_card


@pytest.fixture(scope="module")
def card():
    return load_card("pi", "0.73.1")


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _msg(eid: str, parent: str | None, message: dict) -> dict:
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-03-01T10:00:00Z", "message": message}


HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/work/proj"}


def _user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _assistant(blocks, stop="stop"):
    return {"role": "assistant", "content": blocks, "stopReason": stop, "model": "m", "provider": "p"}


def _result(call_id, text, is_error=False):
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "read",
            "content": [{"type": "text", "text": text}], "isError": is_error}


def test_v1_large_session_is_one_linear_accepted_conversation(traces_dir: Path, card):
    records = list(PiReader().read(traces_dir / "pi" / "badlogic__pi-mono__large-session.jsonl"))
    assert len(records) == 1 and isinstance(records[0], Trajectory)
    traj = records[0]
    assert traj.cwd == "/Users/badlogic/workspaces/pi-mono" and traj.date == "2025-11-20"
    assert "pi.session_v1_linear" in traj.provenance.transformations
    conv = to_conversation(traj, card)
    assert isinstance(conv, Conversation), conv
    assert validate_conversation(conv, card) == []
    assert "drop_aborted_or_error_turn" in conv.meta.transformations
    assert "pi.edit_legacy->edits" in conv.meta.transformations
    # no legacy edit shape survives on the wire
    for m in conv.messages:
        for tc in m.get("tool_calls", []):
            if tc["function"]["name"] == "edit":
                args = json.loads(tc["function"]["arguments"])
                assert list(args)[:2] == ["path", "edits"] and "oldText" not in args
    assert conv.messages[0]["content"] == card.render_system_prompt("/Users/badlogic/workspaces/pi-mono", "2025-11-20")


def test_legacy_edit_is_upgraded_exactly(tmp_path: Path, card):
    rows = [
        {"type": "session", "id": "x", "timestamp": "2025-01-02T03:04:05Z", "cwd": "/r"},
        {"type": "message", "message": _user("fix it")},
        {"type": "message", "message": _assistant(
            [{"type": "toolCall", "id": "c1", "name": "edit", "arguments": {"path": "a.py", "oldText": "x", "newText": "y"}}],
            "toolUse")},
        {"type": "message", "message": _result("c1", "Successfully replaced text in a.py.")},
        {"type": "message", "message": _assistant([{"type": "text", "text": "done"}])},
    ]
    traj = next(iter(PiReader().read(_write(tmp_path / "s.jsonl", rows))))
    conv = to_conversation(traj, card)
    assert isinstance(conv, Conversation), conv
    call = conv.messages[2]["tool_calls"][0]
    assert call == {"id": "c1", "type": "function",
                    "function": {"name": "edit", "arguments": '{"path":"a.py","edits":[{"oldText":"x","newText":"y"}]}'}}
    assert conv.messages[1] == {"role": "user", "content": [{"type": "text", "text": "fix it"}]}
    assert conv.messages[3] == {"role": "tool", "content": "Successfully replaced text in a.py.", "tool_call_id": "c1"}
    assert conv.messages[-1] == {"role": "assistant", "content": "done"}


def test_v3_tree_active_branch_and_side_branch(tmp_path: Path, card):
    rows = [
        HEADER,
        _msg("u1", None, _user("first")),
        _msg("a1", "u1", _assistant([{"type": "text", "text": "old answer"}])),
        _msg("a2", "u1", _assistant([{"type": "text", "text": "new answer"}])),  # re-generated: last entry = leaf
    ]
    records = list(PiReader().read(_write(tmp_path / "tree.jsonl", rows)))
    assert len(records) == 2
    active, side = records
    assert [s.text for s in active.steps] == ["first", "new answer"] and "side_branch" not in active.flags
    assert [s.text for s in side.steps] == ["first", "old answer"] and "side_branch" in side.flags
    assert isinstance(to_conversation(active, card), Conversation)
    rej = to_conversation(side, card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.side_branch


def test_bash_execution_becomes_pi_user_text(tmp_path: Path, card):
    rows = [
        HEADER,
        _msg("b1", None, {"role": "bashExecution", "command": "ls", "output": "a\nb", "exitCode": 2}),
        _msg("u1", "b1", _user("what failed?")),
        _msg("a1", "u1", _assistant([{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ls exited 2"}])),
    ]
    conv = to_conversation(next(iter(PiReader().read(_write(tmp_path / "b.jsonl", rows)))), card)
    assert isinstance(conv, Conversation), conv
    assert conv.messages[1]["content"][0]["text"] == "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2"
    assert "reasoning_not_on_wire" in conv.meta.transformations
    assert all("reasoning_content" not in m for m in conv.messages)


def test_double_encoded_arguments_are_rejected(tmp_path: Path, card):
    rows = [
        HEADER,
        _msg("u1", None, _user("read it")),
        _msg("a1", "u1", _assistant(
            [{"type": "toolCall", "id": "c1", "name": "read", "arguments": json.dumps(json.dumps({"path": "a"}))}],
            "toolUse")),
        _msg("r1", "a1", _result("c1", "x")),
        _msg("a2", "r1", _assistant([{"type": "text", "text": "ok"}])),
    ]
    rej = to_conversation(next(iter(PiReader().read(_write(tmp_path / "d.jsonl", rows)))), card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.arguments_double_encoded


def test_string_arguments_in_a_pi_session_are_double_encoded(tmp_path: Path, card):
    """Pi stores what it parsed from the wire: a model that sent '"{\"path\":…}"' leaves a *string* in the
    session (this is how `harnessfit synth`'s contrast sessions look). It must not be read as wire text."""
    refused = card.validation_failed_text("read", [("root", "must be object")], json.dumps({"path": "a"}))
    rows = [
        HEADER,
        _msg("u1", None, _user("read it")),
        _msg("a1", "u1", _assistant(
            [{"type": "toolCall", "id": "c1", "name": "read", "arguments": json.dumps({"path": "a"})}], "toolUse")),
        _msg("r1", "a1", _result("c1", refused, True)),
        _msg("a2", "r1", _assistant([{"type": "text", "text": "ok"}])),
    ]
    rej = to_conversation(next(iter(PiReader().read(_write(tmp_path / "s.jsonl", rows)))), card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.arguments_double_encoded
    assert "stores the arguments as a string" in rej.detail


def test_missing_result_and_no_final_response(tmp_path: Path, card):
    rows = [
        HEADER,
        _msg("u1", None, _user("read it")),
        _msg("a1", "u1", _assistant([{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}}],
                                    "toolUse")),
    ]
    rej = to_conversation(next(iter(PiReader().read(_write(tmp_path / "m.jsonl", rows)))), card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.missing_tool_result
    rows[-1] = _msg("a1", "u1", _assistant([], "aborted"))
    rej = to_conversation(next(iter(PiReader().read(_write(tmp_path / "n.jsonl", rows)))), card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.no_final_response


def test_schema_violation_from_card_validator(tmp_path: Path, card):
    rows = [
        HEADER,
        _msg("u1", None, _user("write")),
        _msg("a1", "u1", _assistant([{"type": "toolCall", "id": "c1", "name": "write", "arguments": {"path": "a"}}],
                                    "toolUse")),
        _msg("r1", "a1", _result("c1", "err", True)),
        _msg("a2", "r1", _assistant([{"type": "text", "text": "ok"}])),
    ]
    rej = to_conversation(next(iter(PiReader().read(_write(tmp_path / "v.jsonl", rows)))), card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.schema_violation
    assert "missing_required" in rej.detail
