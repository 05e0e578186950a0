"""Claude Code sessions: split messages, tool results, noise, sidechains, and the pinned Read/Edit conversions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessfit.convert import convert_trajectory, to_conversation, validate_conversation
from harnessfit.convert.builder import build_draft
from harnessfit.convert.policy import ConvertPolicy
from harnessfit.core import Conversation, Reason, Rejection
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.claude_code.mapping import BASH_ALTERATIONS
from harnessfit.formats.claude_code.reader import ClaudeCodeReader
from harnessfit.harness.card import load_card


@pytest.fixture(scope="module")
def card():
    return load_card("pi", "0.73.1")


def _line(kind: str, content, *, mid: str | None = None, extra: dict | None = None) -> dict:
    msg = {"role": kind, "content": content}
    if mid:
        msg["id"] = mid
    row = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/u/proj",
        "sessionId": "s",
        "version": "2.0.1",
        "type": kind,
        "message": msg,
        "uuid": "x",
        "timestamp": "2025-10-24T18:00:00.000Z",
    }
    row.update(extra or {})
    return row


def _session(
    tmp_path: Path, calls: list[dict], results: list[dict], name: str = "s.jsonl", extra: dict | None = None
) -> Path:
    rows = [
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
        _line("user", "please change it", extra=extra),
        _line("assistant", [{"type": "text", "text": "Let me look."}], mid="msg_1", extra=extra),
    ]
    rows += [_line("assistant", [c], mid="msg_1", extra=extra) for c in calls]
    rows += [_line("user", [r["block"]], extra={**(extra or {}), "toolUseResult": r.get("tur")}) for r in results]
    rows.append({"type": "progress", "data": {}})
    rows.append(_line("assistant", [{"type": "text", "text": "Done."}], mid="msg_2", extra=extra))
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _use(cid, name, inp):
    return {"type": "tool_use", "id": cid, "name": name, "input": inp}


def _res(cid, content, is_error=False, tur=None):
    block = {"type": "tool_result", "tool_use_id": cid, "content": content}
    if is_error:
        block["is_error"] = True
    return {"block": block, "tur": tur}


def _convert(path: Path, card):
    records = list(ClaudeCodeReader().read(path))
    assert len(records) == 1 and isinstance(records[0], Trajectory)
    return to_conversation(records[0], card)


def test_edit_becomes_exact_pi_edit_call(tmp_path: Path, card):
    path = _session(
        tmp_path,
        [_use("t1", "Edit", {"file_path": "/home/u/proj/a.py", "old_string": "x = 1", "new_string": "x = 2"})],
        [_res("t1", "The file /home/u/proj/a.py has been updated. Here's the result…")],
    )
    conv = _convert(path, card)
    assert isinstance(conv, Conversation), conv
    assert conv.messages[2] == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "t1",
                "type": "function",
                "function": {
                    "name": "edit",
                    "arguments": '{"path":"/home/u/proj/a.py","edits":[{"oldText":"x = 1","newText":"x = 2"}]}',
                },
            }
        ],
    }
    assert conv.messages[3] == {
        "role": "tool",
        "content": "Successfully replaced 1 block(s) in /home/u/proj/a.py.",
        "tool_call_id": "t1",
    }
    assert validate_conversation(conv, card) == []
    assert "claude.merge_split_message" in conv.meta.transformations


def test_read_result_loses_line_number_prefixes_and_reminders(tmp_path: Path, card):
    raw = "     1\u2192def f():\n     2\u2192    return 1\n\n<system-reminder>\nWhatever you do, be careful.\n</system-reminder>\n"
    path = _session(tmp_path, [_use("t1", "Read", {"file_path": "/home/u/proj/a.py"})], [_res("t1", raw)])
    conv = _convert(path, card)
    assert isinstance(conv, Conversation), conv
    assert json.loads(conv.messages[2]["tool_calls"][0]["function"]["arguments"]) == {"path": "/home/u/proj/a.py"}
    assert conv.messages[3]["content"] == "def f():\n    return 1"
    assert "read_result.strip_line_numbers" in conv.meta.transformations


def test_multiedit_write_bash(tmp_path: Path, card):
    """MultiEdit and Write results are Pi's texts; a Bash call maps exactly but its result is never byte-exact (Claude
    Code trims a command's output): at tier byte the turn's three calls are labels and the context after them is
    not; at tier content the result is Pi's text from the recorded output, and the alterations are named."""
    calls = [
        _use(
            "t1",
            "MultiEdit",
            {
                "file_path": "/p/a",
                "edits": [{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}],
            },
        ),
        _use("t2", "Write", {"file_path": "/p/b", "content": "h\u00e9llo"}),
        _use("t3", "Bash", {"command": "false", "timeout": 1500}),
    ]
    results = [_res("t1", "ok"), _res("t2", "ok"), _res("t3", "Exit code 1\nboom", is_error=True)]
    (traj,) = ClaudeCodeReader().read(_session(tmp_path, calls, results))
    byte = ConvertPolicy(fidelity="byte")
    draft = build_draft(traj, card, policy=byte)
    calls_out = draft.messages[2]["tool_calls"]
    assert [c["function"]["name"] for c in calls_out] == ["edit", "write", "bash"]
    assert json.loads(calls_out[0]["function"]["arguments"])["edits"] == [
        {"oldText": "a", "newText": "b"},
        {"oldText": "c", "newText": "d"},
    ]
    assert json.loads(calls_out[2]["function"]["arguments"]) == {"command": "false", "timeout": 2}
    tools = [m["content"] for m in draft.messages if m["role"] == "tool"]
    assert tools == ["Successfully replaced 2 block(s) in /p/a.", "Successfully wrote 5 bytes to /p/b"]
    (failed,) = draft.failed_results
    assert "4 characters of output whose edges Claude Code trimmed" in failed.failure.detail
    out = convert_trajectory(traj, card, policy=byte)
    assert isinstance(out.record, Rejection) and out.record.reason == Reason.unmappable_result
    assert (out.record.calls, out.record.labels) == (3, 3) and out.calls.fates == ["label"] * 3
    content = build_draft(traj, card)  # the default tier: content
    tools = [m["content"] for m in content.messages if m["role"] == "tool"]
    assert tools[2] == "boom\n\nCommand exited with code 1" and content.failed_results == []
    (altered,) = content.altered_results
    assert altered.alterations == BASH_ALTERATIONS and altered.message["content"] == tools[2]
    assert "altered:claude_code.bash_edges_trimmed" in content.transformations


def test_todo_write_is_dropped_only_where_it_is_its_turns_only_content(tmp_path: Path, card):
    todo = _use("t1", "TodoWrite", {"todos": [{"content": "fix it", "status": "pending"}]})
    ack = _res("t1", "Todos have been modified successfully. Ensure that you continue to use the todo list.")
    rows = [
        _line("user", "please change it"),
        _line("assistant", [todo], mid="m1"),
        _line("user", [ack["block"]]),
        _line("assistant", [_use("t2", "Read", {"file_path": "/p/ls.txt"})], mid="m2"),
        _line("user", [_res("t2", "     1\u2192a.py")["block"]]),
        _line("assistant", [{"type": "text", "text": "Done."}], mid="m3"),
    ]
    path = tmp_path / "alone.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    conv = _convert(path, card)
    assert isinstance(conv, Conversation), conv
    assert [m["role"] for m in conv.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert "drop:ui_only:TodoWrite" in conv.meta.transformations
    # with text in its turn, dropping it would change that action: it blocks, and nothing before it is a label
    rej = _convert(_session(tmp_path, [todo], [ack], name="with_text.jsonl"), card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.ui_only_call
    assert "also holds text" in rej.detail and rej.labels == 0 and rej.calls == 1


@pytest.mark.parametrize(
    ("call", "result", "reason"),
    [
        (
            _use("t1", "Edit", {"file_path": "/p", "old_string": "a", "new_string": "b", "replace_all": True}),
            _res("t1", "ok"),
            Reason.unmappable_arguments,
        ),
        (_use("t1", "Grep", {"pattern": "x"}), _res("t1", "ok"), Reason.unsupported_tool),
        (_use("t1", "mcp__srv__tool", {}), _res("t1", "ok"), Reason.unsupported_tool),
        (
            _use("t1", "Bash", {"command": "rm -rf /"}),
            _res("t1", "The user doesn't want to proceed with this tool use. The tool use was rejected", is_error=True),
            Reason.user_rejected_call,
        ),
        (
            _use("t1", "Read", {"file_path": "/p/x.png"}),
            _res("t1", [{"type": "image", "source": {"type": "base64", "data": "AAAA"}}]),
            Reason.image_content,
        ),
    ],
)
def test_rejections_have_reasons(tmp_path: Path, card, call, result, reason):
    rej = _convert(_session(tmp_path, [call], [result]), card)
    assert isinstance(rej, Rejection) and rej.reason == reason, rej


def _sidechain_session(tmp_path: Path, prompt: str, task_prompt: str | None) -> Path:
    """A main thread whose Task call (with ``task_prompt``; no main thread when ``None``) runs a sidechain opened by
    ``prompt``, which reads a file and answers; the Task result closes the main thread."""
    main = []
    if task_prompt is not None:
        main.append(_line("user", "survey the repo", extra={"uuid": "u1"}))
        main.append(
            _line(
                "assistant",
                [
                    _use(
                        "task1", "Task", {"description": "d", "prompt": task_prompt, "subagent_type": "general-purpose"}
                    )
                ],
                mid="m_main",
                extra={"uuid": "a1", "parentUuid": "u1"},
            )
        )
    side = {"isSidechain": True}
    rows = [
        *main,
        _line("user", prompt, extra={**side, "uuid": "s1"}),
        _line(
            "assistant",
            [_use("r1", "Read", {"file_path": "/home/u/proj/a.py"})],
            mid="m_s1",
            extra={**side, "uuid": "s2", "parentUuid": "s1"},
        ),
        _line("user", [_res("r1", "     1\u2192x = 1\n")["block"]], extra={**side, "uuid": "s3", "parentUuid": "s2"}),
        _line(
            "assistant",
            [{"type": "text", "text": "a.py sets x."}],
            mid="m_s2",
            extra={**side, "uuid": "s4", "parentUuid": "s3"},
        ),
    ]
    if task_prompt is not None:
        rows += [
            _line(
                "user",
                [_res("task1", [{"type": "text", "text": "a.py sets x."}])["block"]],
                extra={"uuid": "u2", "parentUuid": "a1"},
            ),
            _line(
                "assistant",
                [{"type": "text", "text": "Done."}],
                mid="m_main2",
                extra={"uuid": "a2", "parentUuid": "u2"},
            ),
        ]
    path = tmp_path / "side.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_sidechain_is_a_trajectory_opening_with_its_task_prompt(tmp_path: Path, card):
    """A Task sub-agent's run is a whole conversation whose user message is the prompt the parent wrote: it converts
    on its own (its calls are labels) and shares the parent's root request; the parent's Task call stays a blocker."""
    path = _sidechain_session(tmp_path, "Describe a.py", "Describe a.py")
    main, side = ClaudeCodeReader().read(path)
    assert main.root_request_id == side.root_request_id
    conv = to_conversation(side, card)
    assert isinstance(conv, Conversation), conv
    assert conv.messages[1] == {"role": "user", "content": [{"type": "text", "text": "Describe a.py"}]}
    assert [c["function"]["name"] for c in conv.messages[2]["tool_calls"]] == ["read"]
    assert "claude.subagent_prompt_from_task" in conv.meta.transformations
    assert validate_conversation(conv, card) == []
    rej = to_conversation(main, card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.unsupported_tool and "Task" in rej.detail


def test_sidechain_without_its_task_call_is_still_its_prompt(tmp_path: Path, card):
    """The parent's call is not in the file (a sub-agent transcript on its own): the prompt the sidechain opens with
    is still what the sub-agent's model saw, noted as unlinked."""
    (side,) = ClaudeCodeReader().read(_sidechain_session(tmp_path, "Describe a.py", None))
    assert "subagent" not in side.flags and "claude.subagent_prompt_unlinked" in side.provenance.transformations
    assert isinstance(to_conversation(side, card), Conversation)


def test_subagent_transcript_file_links_to_its_parent_session(tmp_path: Path, card):
    """A ``<session>/subagents/agent-<id>.jsonl`` file (its lines carry the parent's ``sessionId``) is a sub-agent's
    run: a trajectory noting ``subagent_of:claude_code:<session>``, which the parent session's file (it has a Task
    call) names as ``session:claude_code:<session>``; Claude Code's compaction runs there stay flagged."""
    parent = _sidechain_session(tmp_path, "Describe a.py", "Describe a.py")
    (main, _) = ClaudeCodeReader().read(parent)
    assert "session:claude_code:s" in main.provenance.transformations
    sub = tmp_path / "s" / "subagents"
    sub.mkdir(parents=True)
    rows = [r for r in map(json.loads, parent.read_text().splitlines()) if r.get("isSidechain")]
    (sub / "agent-a1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (side,) = ClaudeCodeReader().read(sub / "agent-a1.jsonl")
    assert "subagent_of:claude_code:s" in side.provenance.transformations and "subagent" not in side.flags
    assert isinstance(to_conversation(side, card), Conversation)
    (sub / "agent-acompact-1.jsonl").write_text((sub / "agent-a1.jsonl").read_text(), encoding="utf-8")
    (compact,) = ClaudeCodeReader().read(sub / "agent-acompact-1.jsonl")
    rej = to_conversation(compact, card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.subagent and "compaction" in rej.detail


def test_warmup_sidechain_stays_a_subagent(tmp_path: Path, card):
    """Claude Code's own warm-up of a sub-agent ("Warmup", no parent call wrote it) is no one's request."""
    (side,) = ClaudeCodeReader().read(_sidechain_session(tmp_path, "Warmup", None))
    rej = to_conversation(side, card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.subagent and "warm-up" in rej.detail


def test_real_sessions(traces_dir: Path, card):
    d = traces_dir / "claude_code"
    (traj,) = ClaudeCodeReader().read(d / "iampkuhz__feipi-session-browser__8a283a61-e3f0-4e8f-ba06-6711e2fcf2ed.jsonl")
    # its Bash results are never byte-exact: at tier byte the actions up to the first are labels
    out = convert_trajectory(traj, card, policy=ConvertPolicy(fidelity="byte"))
    assert isinstance(out.record, Rejection) and out.record.reason == Reason.unmappable_result
    assert "Bash" in out.record.detail and out.record.labels == 2 and out.prefix is not None
    assert validate_conversation(out.prefix, card) == []
    assert [m["role"] for m in out.prefix.messages][:3] == ["system", "user", "assistant"]
    assert out.prefix.meta.altered is None
    # at tier content its Bash results are Pi's texts from the recorded output: more labels, each after the first
    # altered result of tier content
    out = convert_trajectory(traj, card)
    assert out.calls.labels > 2 and sum(out.calls.content) == out.calls.labels - 2
    conv = out.record if isinstance(out.record, Conversation) else out.prefix
    assert conv is not None and validate_conversation(conv, card) == []
    assert conv.meta.altered and all(conv.messages[a.message]["role"] == "tool" for a in conv.meta.altered)
    rej = _convert(d / "jnarowski__agentcmd__full-session-two.jsonl", card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.unsupported_tool and "AskUserQuestion" in rej.detail
    rej = _convert(d / "marot__spotter__short.jsonl", card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.unsupported_tool and "Glob" in rej.detail
