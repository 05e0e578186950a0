"""Pi sessions as Pi loads them: v1 linear (and its compaction index), v3 trees (active branch + side branches),
compaction epochs, bashExecution/custom/branch-summary entries, context edits, legacy edits, aborted turns, calls
that lost their result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessfit.convert import to_conversation, validate_conversation
from harnessfit.core import Conversation, Reason, Rejection
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.pi.reader import (
    BRANCH_PREFIX,
    BRANCH_SUFFIX,
    COMPACTION_PREFIX,
    COMPACTION_SUFFIX,
    PiReader,
)
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
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "read",
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
    }


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
        {
            "type": "message",
            "message": _assistant(
                [
                    {
                        "type": "toolCall",
                        "id": "c1",
                        "name": "edit",
                        "arguments": {"path": "a.py", "oldText": "x", "newText": "y"},
                    }
                ],
                "toolUse",
            ),
        },
        {"type": "message", "message": _result("c1", "Successfully replaced text in a.py.")},
        {"type": "message", "message": _assistant([{"type": "text", "text": "done"}])},
    ]
    traj = next(iter(PiReader().read(_write(tmp_path / "s.jsonl", rows))))
    conv = to_conversation(traj, card)
    assert isinstance(conv, Conversation), conv
    call = conv.messages[2]["tool_calls"][0]
    assert call == {
        "id": "c1",
        "type": "function",
        "function": {"name": "edit", "arguments": '{"path":"a.py","edits":[{"oldText":"x","newText":"y"}]}'},
    }
    assert conv.messages[1] == {"role": "user", "content": [{"type": "text", "text": "fix it"}]}
    # Pi ≤ 0.63.1's wording, put in the card's words (no Pi since 0.63.2 writes "replaced text in")
    assert conv.messages[3] == {
        "role": "tool",
        "content": "Successfully replaced 1 block(s) in a.py.",
        "tool_call_id": "c1",
    }
    assert "pi.text_rerendered:edit" in conv.meta.transformations
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
    assert isinstance(to_conversation(active, card), Conversation)
    # the side branch is rejected by the reader from its own entry (line 3), never built
    assert isinstance(side, Rejection) and side.reason == Reason.side_branch
    assert (side.line_start, side.line_end) == (3, 3)


def test_bash_execution_becomes_pi_user_text(tmp_path: Path, card):
    rows = [
        HEADER,
        _msg("b1", None, {"role": "bashExecution", "command": "ls", "output": "a\nb", "exitCode": 2}),
        _msg("u1", "b1", _user("what failed?")),
        _msg(
            "a1", "u1", _assistant([{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ls exited 2"}])
        ),
    ]
    traj = next(iter(PiReader().read(_write(tmp_path / "b.jsonl", rows))))
    conv = to_conversation(traj, card)
    assert isinstance(conv, Conversation), conv
    assert conv.messages[1]["content"][0]["text"] == "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2"
    # Pi before 1.3.0 sends another model's thinking as a text block, joined with the text (transformMessages)
    assert conv.messages[-1] == {"role": "assistant", "content": "hmmls exited 2"}
    assert "pi.thinking_as_text" in conv.meta.transformations
    assert all("reasoning_content" not in m for m in conv.messages)
    # from 1.3.0 it drops it
    newest = to_conversation(traj, load_card("pi", "1.6.0"))
    assert isinstance(newest, Conversation) and newest.messages[-1] == {"role": "assistant", "content": "ls exited 2"}
    assert "pi.thinking_dropped" in newest.meta.transformations


def test_double_encoded_arguments_are_rejected(tmp_path: Path, card):
    rows = [
        HEADER,
        _msg("u1", None, _user("read it")),
        _msg(
            "a1",
            "u1",
            _assistant(
                [{"type": "toolCall", "id": "c1", "name": "read", "arguments": json.dumps(json.dumps({"path": "a"}))}],
                "toolUse",
            ),
        ),
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
        _msg(
            "a1",
            "u1",
            _assistant(
                [{"type": "toolCall", "id": "c1", "name": "read", "arguments": json.dumps({"path": "a"})}], "toolUse"
            ),
        ),
        _msg("r1", "a1", _result("c1", refused, True)),
        _msg("a2", "r1", _assistant([{"type": "text", "text": "ok"}])),
    ]
    rej = to_conversation(next(iter(PiReader().read(_write(tmp_path / "s.jsonl", rows)))), card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.arguments_double_encoded
    assert "stores the arguments as a string" in rej.detail


def test_a_call_without_result_gets_pis_synthetic_result(tmp_path: Path, card):
    """Pi answers a call that lost its result with "No result provided" when it sends the history
    (transformMessages): a later turn of a Pi session was written after exactly that, so the session is exact."""
    rows = [
        HEADER,
        _msg("u1", None, _user("read it")),
        _msg(
            "a1",
            "u1",
            _assistant(
                [
                    {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}},
                    {"type": "toolCall", "id": "c2", "name": "read", "arguments": {"path": "b"}},
                ],
                "toolUse",
            ),
        ),
        _msg("r2", "a1", _result("c2", "B")),
        _msg("u2", "r2", _user("go on")),
        _msg("a2", "u2", _assistant([{"type": "text", "text": "done"}])),
    ]
    conv = to_conversation(next(iter(PiReader().read(_write(tmp_path / "m.jsonl", rows)))), card)
    assert isinstance(conv, Conversation), conv
    assert conv.messages[3:5] == [
        {"role": "tool", "content": "B", "tool_call_id": "c2"},
        {"role": "tool", "content": card.errors["no_result"], "tool_call_id": "c1"},
    ]
    assert "pi.synthetic_no_result" in conv.meta.transformations
    # a session that ends on the call: a valid Pi context, but no final answer to train as a conversation
    rej = to_conversation(next(iter(PiReader().read(_write(tmp_path / "e.jsonl", rows[:3])))), card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.no_final_response


def test_an_aborted_last_turn_leaves_no_final_response(tmp_path: Path, card):
    rows = [
        HEADER,
        _msg("u1", None, _user("read it")),
        _msg("a1", "u1", _assistant([], "aborted")),
    ]
    rej = to_conversation(next(iter(PiReader().read(_write(tmp_path / "n.jsonl", rows)))), card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.no_final_response


def test_schema_violation_from_card_validator(tmp_path: Path, card):
    rows = [
        HEADER,
        _msg("u1", None, _user("write")),
        _msg(
            "a1",
            "u1",
            _assistant([{"type": "toolCall", "id": "c1", "name": "write", "arguments": {"path": "a"}}], "toolUse"),
        ),
        _msg("r1", "a1", _result("c1", "err", True)),
        _msg("a2", "r1", _assistant([{"type": "text", "text": "ok"}])),
    ]
    rej = to_conversation(next(iter(PiReader().read(_write(tmp_path / "v.jsonl", rows)))), card)
    assert isinstance(rej, Rejection) and rej.reason == Reason.schema_violation
    assert "missing_required" in rej.detail


def _v1(rows: list[dict]) -> list[dict]:
    """Rows without ids (the v1 layout)."""
    return [{k: v for k, v in r.items() if k not in ("id", "parentId")} for r in rows]


def _answered(prefix: str, n: int) -> list[dict]:
    """``n`` v1 rows: a prompt and its answer, repeated."""
    rows = []
    for k in range(n // 2):
        rows += [
            {"type": "message", "message": _user(f"{prefix} q{k}")},
            {"type": "message", "message": _assistant([{"type": "text", "text": f"{prefix} a{k}"}])},
        ]
    return rows


def test_v1_compaction_index_is_migrated_like_pi(tmp_path: Path, card):
    """``migrateV1ToV2``: firstKeptEntryIndex counts the file's entries with the header as 0. Epoch 0 is the whole
    history; epoch 1 is Pi's summary, the kept entries (history only) and what followed."""
    header = {"type": "session", "id": "x", "timestamp": "2025-01-02T03:04:05Z", "cwd": "/r"}
    rows = [
        header,
        *_answered("old", 6),  # file entries 1..6
        {"type": "compaction", "summary": "S", "firstKeptEntryIndex": 5, "tokensBefore": 9},
        *_answered("new", 2),
    ]
    epoch0, epoch1 = PiReader().read(_write(tmp_path / "v1.jsonl", rows))
    assert [s.text for s in epoch0.steps] == [r["message"]["content"][0]["text"] for r in rows[1:7]]
    assert [s.text for s in epoch1.steps] == [
        COMPACTION_PREFIX + "S" + COMPACTION_SUFFIX,
        "old q2",
        "old a2",
        "new q0",
        "new a0",
    ]
    assert [bool(s.meta.get("history_only")) for s in epoch1.steps] == [True, True, True, False, False]
    assert "pi.v1_compaction_index->id" in epoch1.provenance.transformations
    assert epoch0.root_request_id == epoch1.root_request_id  # one task, one split
    conv = to_conversation(epoch1, card)
    assert isinstance(conv, Conversation) and conv.meta.labels_from == 4  # system, summary, kept q2, kept a2
    # an index naming the header (or nothing) keeps nothing, as Pi's migration leaves firstKeptEntryId unset
    for bad in (0, 99):
        rows[7] = {**rows[7], "firstKeptEntryIndex": bad}
        *_, last = PiReader().read(_write(tmp_path / f"v1-{bad}.jsonl", rows))
        assert [s.text for s in last.steps][1:] == ["new q0", "new a0"]


def test_compaction_epochs_and_nested_summaries_by_version(tmp_path: Path):
    """A second compaction that keeps the first: Pi 0.80.4–0.86.x sends the older summary too, others do not."""
    rows = [
        HEADER,
        _msg("u1", None, _user("q1")),
        _msg("a1", "u1", _assistant([{"type": "text", "text": "a1"}])),
        {"type": "compaction", "id": "c1", "parentId": "a1", "summary": "S1", "firstKeptEntryId": "a1"},
        _msg("u2", "c1", _user("q2")),
        _msg("a2", "u2", _assistant([{"type": "text", "text": "a2"}])),
        {"type": "compaction", "id": "c2", "parentId": "a2", "summary": "S2", "firstKeptEntryId": "a1"},
        _msg("u3", "c2", _user("q3")),
        _msg("a3", "u3", _assistant([{"type": "text", "text": "a3"}])),
    ]
    trajs = list(PiReader().read(_write(tmp_path / "c.jsonl", rows)))
    assert len(trajs) == 3 and len({t.id for t in trajs}) == 3
    last = trajs[-1]
    texts = {
        v: [
            m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
            for m in to_conversation(last, load_card("pi", v)).messages[1:]
        ]
        for v in ("0.79.10", "0.82.0")
    }
    s1, s2 = (COMPACTION_PREFIX + s + COMPACTION_SUFFIX for s in ("S1", "S2"))
    assert texts["0.79.10"] == [s2, "a1", "q2", "a2", "q3", "a3"]
    assert texts["0.82.0"] == [s2, "a1", s1, "q2", "a2", "q3", "a3"]
    # nothing after the last compaction: no epoch of its own (unless asked for: the context Pi would send next)
    assert len(list(PiReader().read(_write(tmp_path / "end.jsonl", rows[:7])))) == 2
    *_, pending = PiReader(unanswered_epochs=True).read(_write(tmp_path / "end2.jsonl", rows[:7]))
    assert [s.text for s in pending.steps] == [s2, "a1", s1, "q2", "a2"]


def test_entries_become_the_messages_convertToLlm_makes(tmp_path: Path, card):
    rows = [
        {**HEADER, "version": 2},
        _msg("u1", None, {"role": "user", "content": "plain string"}),
        {
            "type": "custom_message",
            "id": "cm",
            "parentId": "u1",
            "customType": "x",
            "content": "from ext",
            "display": False,
        },
        _msg("h1", "cm", {"role": "hookMessage", "content": [{"type": "text", "text": "hook"}]}),  # v2: custom
        {"type": "branch_summary", "id": "bs", "parentId": "h1", "summary": "B", "fromId": "u1"},
        {"type": "custom", "id": "cu", "parentId": "bs", "customType": "state", "data": {}},  # never sent
        _msg("x1", "cu", {"role": "someFutureRole", "content": "?"}),  # convertToLlm drops unknown roles
        _msg(
            "b1",
            "x1",
            {
                "role": "bashExecution",
                "command": "make",
                "output": "o",
                "exitCode": 0,
                "truncated": True,
                "fullOutputPath": "/tmp/out.txt",
            },
        ),
        _msg("b2", "b1", {"role": "bashExecution", "command": "secret", "output": "", "excludeFromContext": True}),
        _msg("a1", "b2", _assistant([{"type": "text", "text": "ok"}])),
    ]
    traj = next(iter(PiReader().read(_write(tmp_path / "e.jsonl", rows))))
    conv = to_conversation(traj, card)
    assert isinstance(conv, Conversation), conv
    assert conv.messages[1:] == [
        {"role": "user", "content": "plain string"},
        {"role": "user", "content": [{"type": "text", "text": "from ext"}]},
        {"role": "user", "content": [{"type": "text", "text": "hook"}]},
        {"role": "user", "content": [{"type": "text", "text": BRANCH_PREFIX + "B" + BRANCH_SUFFIX}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Ran `make`\n```\no\n```\n\n[Output truncated. Full output: /tmp/out.txt]"}
            ],
        },
        {"role": "assistant", "content": "ok"},
    ]
    assert {"pi.unknown_role_dropped:someFutureRole", "pi.bash_excluded_from_context"} <= set(conv.meta.transformations)
    # in a v3 file hookMessage is no longer migrated: an unknown role, dropped
    rows[0] = HEADER
    traj = next(iter(PiReader().read(_write(tmp_path / "e3.jsonl", rows))))
    assert "hook" not in [s.text for s in traj.steps]


def test_context_edits_replace_or_leave_out_content(tmp_path: Path, card):
    rows = [
        HEADER,
        _msg("u1", None, _user("q")),
        _msg(
            "a1",
            "u1",
            _assistant([{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}}], "toolUse"),
        ),
        _msg("r1", "a1", _result("c1", "a very long file")),
        _msg("u2", "r1", _user("noise")),
        {"type": "context_edit", "id": "e1", "parentId": "u2", "targetId": "r1", "replacement": {"content": "[cut]"}},
        {"type": "context_edit", "id": "e2", "parentId": "e1", "targetId": "u2", "replacement": None},
        _msg("a2", "e2", _assistant([{"type": "text", "text": "done"}])),
    ]
    conv = to_conversation(next(iter(PiReader().read(_write(tmp_path / "x.jsonl", rows)))), card)
    assert isinstance(conv, Conversation), conv
    assert [m["role"] for m in conv.messages[1:]] == ["user", "assistant", "tool", "assistant"]
    assert conv.messages[3] == {"role": "tool", "content": "[cut]", "tool_call_id": "c1"}
    assert "pi.context_edit_applied" in conv.meta.transformations


def test_a_rejected_epoch_keeps_its_own_labels_and_counts_kept_calls_once(tmp_path: Path, card):
    """After a compaction, the kept turns are history only: the exact prefix of a rejected epoch counts and trains
    only the turns written after the compaction (its ``labels_from`` says where they start), and the yield counts
    every call once, in the epoch that wrote it, so calls read still equal the calls in the file."""
    from harnessfit.convert.wire import convert_trajectory
    from harnessfit.convert.yields import FileYield
    from harnessfit.dataset.exports import sft_records

    def call(cid, name="read"):
        return _assistant([{"type": "toolCall", "id": cid, "name": name, "arguments": {"path": "a.txt"}}], "toolUse")

    rows = [
        HEADER,
        _msg("u1", None, _user("q1")),
        _msg("a1", "u1", call("c1")),
        _msg("r1", "a1", _result("c1", "x")),
        _msg("a1b", "r1", _assistant([{"type": "text", "text": "read it"}])),
        {"type": "compaction", "id": "k", "parentId": "a1b", "summary": "S", "firstKeptEntryId": "a1"},
        _msg("u2", "k", _user("q2")),
        _msg("a2", "u2", call("c2")),
        _msg("r2", "a2", _result("c2", "y")),
        _msg("a3", "r2", call("c3", "nope")),
        _msg("r3", "a3", _result("c3", "z")),
        _msg("a3b", "r3", _assistant([{"type": "text", "text": "done"}])),
    ]
    epoch0, epoch1 = PiReader().read(_write(tmp_path / "s.jsonl", rows))
    first, second = convert_trajectory(epoch0, card), convert_trajectory(epoch1, card)
    assert isinstance(first.record, Conversation) and first.calls.fates == ["label"]
    assert isinstance(second.record, Rejection) and second.record.reason == Reason.unsupported_tool
    prefix = second.prefix
    assert prefix is not None and prefix.meta.prefix.labels == 1
    # system, summary, the kept call turn, its result and the kept answer are history only
    assert prefix.meta.labels_from == 5 and prefix.messages[prefix.meta.labels_from - 1]["content"] == "read it"
    (record,) = sft_records(prefix.model_dump(), "train")
    assert record.action["tool_calls"][0]["id"] == "c2"
    assert second.calls.fates == ["label", "unsupported_tool"]  # c2, c3; the kept c1 is epoch 0's
    fy = FileYield("s.jsonl", "pi")
    fy.add(first.calls)
    fy.add(second.calls)
    assert (fy.calls, fy.labels, dict(fy.lost)) == (3, 2, {"unsupported_tool": 1}) and fy.holds


def test_a_parent_cycle_is_its_own_reason(tmp_path: Path):
    """Issue 27 item 6: Pi's buildSessionPath never ends on a parentId loop, so Pi cannot open the file; it was
    reported as "empty: no user message"."""
    rows = [
        HEADER,
        _msg("u1", "a1", _user("first")),  # points forward: u1 -> a1 -> u1
        _msg("a1", "u1", _assistant([{"type": "text", "text": "answer"}])),
    ]
    records = list(PiReader().read(_write(tmp_path / "cycle.jsonl", rows)))
    assert [type(r) for r in records] == [Rejection]
    assert records[0].reason == Reason.parent_cycle and "comes back to line" in records[0].detail
    assert (records[0].line_start, records[0].line_end) == (3, 3)
