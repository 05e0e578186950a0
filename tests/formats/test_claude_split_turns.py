"""Claude Code writes one assistant message over several lines (one content block per line, all with the same
``message.id``), and with streaming tool execution it writes a call's result as soon as the call has run — before
the message's next block. The reader rebuilds the one turn the model wrote (every call, in order) followed by its
results: a property test over every way the result lines can be interleaved with the message's lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _helpers.claude_steps import read_record
from harnessfit.convert import convert_trajectory
from harnessfit.core import Conversation, Trajectory
from harnessfit.formats.claude_code.reader import ClaudeCodeReader
from harnessfit.harness.card import load_card

CARD = load_card("pi", "0.73.1")


def _row(n: int, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": f"u{n}",
        "parentUuid": f"u{n - 1}" if n else None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/u/proj",
        "sessionId": "s",
        "version": "2.1.0",
        "timestamp": "2025-10-24T18:00:00.000Z",
        "message": {"role": kind, "content": content},
        **extra,
    }


def _interleaved(k: int, keys: list[float], lead: bool) -> list[tuple[str, int]]:
    """The message's lines (an optional text line, then call 0…k-1) with result i placed after call i, at a position
    (and in an order among the results) the ``keys`` choose."""
    lines: list[tuple[str, int]] = [("text", -1)] if lead else []
    pending: list[tuple[float, int]] = []
    for i in range(k):
        lines.append(("call", i))
        pending.append((keys[i], i))
        pending.sort()
        while pending and pending[0][0] < (i + 1) / k:  # results whose time has come are written before call i+1
            lines.append(("result", pending.pop(0)[1]))
    lines += [("result", i) for _, i in pending]
    return lines


def _session(tmp_path: Path, order: list[tuple[str, int]], k: int) -> Path:
    rows = [_row(0, "user", "read the files")]
    for kind, i in order:
        n = len(rows)
        if kind == "text":
            rows.append(_row(n, "assistant", [{"type": "text", "text": "Reading them."}]))
        elif kind == "call":
            block = {"type": "tool_use", "id": f"toolu_{i}", "name": "Read", "input": {"file_path": f"/p/f{i}.txt"}}
            rows.append(_row(n, "assistant", [block]))
        else:
            block = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"     1\u2192line {i}"}
            rows.append(_row(n, "user", [block], toolUseResult=read_record(f"/p/f{i}.txt", f"line {i}")))
        if kind != "result":
            rows[-1]["message"].update(id="msg_1", model="claude-x", stop_reason=None)
    last_call = max(  # the last line of the message carries its stop reason, as Claude Code writes it
        j for j, r in enumerate(rows) if r["type"] == "assistant"
    )
    rows[last_call]["message"]["stop_reason"] = "tool_use"
    rows.append(_row(len(rows), "assistant", [{"type": "text", "text": "Both read."}]))
    rows[-1]["message"].update(id="msg_2", model="claude-x", stop_reason="end_turn")
    path = tmp_path / f"split-{k}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    k=st.integers(1, 5), keys=st.lists(st.floats(0, 1, exclude_max=True), min_size=5, max_size=5), lead=st.booleans()
)
def test_interleaved_results_rebuild_one_turn(tmp_path: Path, k: int, keys: list[float], lead: bool) -> None:
    order = _interleaved(k, keys, lead)
    records = list(ClaudeCodeReader().read(_session(tmp_path, order, k)))
    assert len(records) == 1 and isinstance(records[0], Trajectory), records
    steps = records[0].steps
    assert [s.role for s in steps] == ["user", "assistant", *["tool"] * k, "assistant"], order
    assert [c.id for c in steps[1].tool_calls] == [f"toolu_{i}" for i in range(k)]
    assert sorted(s.tool_call_id for s in steps[2 : 2 + k]) == [f"toolu_{i}" for i in range(k)]
    assert steps[1].stop_reason == "tool_use"
    out = convert_trajectory(records[0], CARD)
    record = out.record
    assert isinstance(record, Conversation), (order, record)
    roles = [m["role"] for m in record.messages]
    assert roles == ["system", "user", "assistant", *["tool"] * k, "assistant"], order
    assert [m["tool_call_id"] for m in record.messages[3 : 3 + k]] == [f"toolu_{i}" for i in range(k)]
    assert out.calls.labels == k, out.calls


def test_a_user_message_between_lines_of_one_id_is_not_merged_across(tmp_path: Path) -> None:
    """Only result lines may sit between the lines of one message: a user's text between them ends the turn (the
    reader never moves a call before a user message it followed in the file)."""
    rows = [
        _row(0, "user", "go"),
        _row(1, "assistant", [{"type": "tool_use", "id": "a", "name": "Read", "input": {"file_path": "/p/a"}}]),
        _row(2, "user", [{"type": "tool_result", "tool_use_id": "a", "content": "     1\u2192x"}]),
        _row(3, "user", "and also b"),
        _row(4, "assistant", [{"type": "tool_use", "id": "b", "name": "Read", "input": {"file_path": "/p/b"}}]),
    ]
    for r in (rows[1], rows[4]):
        r["message"].update(id="msg_1", model="claude-x")
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (traj,) = ClaudeCodeReader().read(path)
    assert [s.role for s in traj.steps] == ["user", "assistant", "tool", "user", "assistant"]
