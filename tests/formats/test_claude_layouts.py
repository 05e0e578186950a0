"""Claude Code session layouts beyond plain turns, on synthetic files: prompt slash commands (the expansion is the
prompt, a property test over the layouts Claude Code writes), local commands, compactions, microcompactions,
synthetic assistant lines (API errors, stand-ins) and bare strings in a content list."""

from __future__ import annotations

import json
from itertools import count
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _helpers.claude_steps import read_record
from _helpers.raw_calls import count_calls
from harnessfit.convert import convert, to_conversation
from harnessfit.core import Conversation, Trajectory
from harnessfit.formats.claude_code.reader import ClaudeCodeReader
from harnessfit.harness.card import load_card

CARD = load_card("pi", "0.73.1")
_ids = count()


class _File:
    """A synthetic session, line by line; ``linked`` lines carry uuid/parentUuid (one chain per thread)."""

    def __init__(self, linked: bool = True) -> None:
        self.rows: list[dict[str, Any]] = []
        self.linked = linked
        self.last: dict[bool, str | None] = {False: None, True: None}  # last uuid per (sidechain?) chain

    def line(self, kind: str, body: Any = None, *, side: bool = False, parent: Any = "chain", **extra: Any) -> str:
        uid = f"u{next(_ids)}"
        row: dict[str, Any] = {
            "isSidechain": side,
            "userType": "external",
            "cwd": "/home/u/proj",
            "sessionId": "s",
            "version": "2.0.1",
            "type": kind,
            "timestamp": "2025-10-24T18:00:00.000Z",
            **extra,
        }
        if body is not None:
            row["message"] = {"role": kind, "content": body}
        if self.linked:
            row["uuid"] = uid
            row["parentUuid"] = self.last[side] if parent == "chain" else parent
            self.last[side] = uid
        self.rows.append(row)
        return uid

    def user(self, content: Any, **kw: Any) -> str:
        return self.line("user", content, **kw)

    def assistant(self, blocks: list[dict[str, Any]], mid: str, **kw: Any) -> str:
        uid = self.line("assistant", blocks, **kw)
        self.rows[-1]["message"]["id"] = mid
        return uid

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(r) + "\n" for r in self.rows), encoding="utf-8")
        return path


def _text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def _read_call(cid: str, path: str) -> dict[str, Any]:
    """An exact action (a Claude Code Read; a Bash result never is Pi's text: Claude Code trims command output)."""
    return {"type": "tool_use", "id": cid, "name": "Read", "input": {"file_path": path}}


def _result(cid: str, out: str) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "tool_use_id": cid, "content": out}]


def _echo(name: str, args: str | None, name_first: bool, sep: str, running: bool) -> str:
    tags = [
        f"<command-message>{name}{' is running…' if running else ''}</command-message>",
        f"<command-name>/{name}</command-name>",
    ]
    if name_first:
        tags.reverse()
    if args is not None:
        tags.append(f"<command-args>{args}</command-args>")
    return sep.join(tags)


def _wire_text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(p["text"] for p in content if p["type"] == "text")


def _read(path: Path) -> list[Trajectory]:
    records = list(ClaudeCodeReader().read(path))
    assert all(isinstance(r, Trajectory) for r in records), records
    return records  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------------ slash commands
@st.composite
def command_session(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "prompt": draw(st.booleans()),  # a prompt command (expansion follows) or a local one (caveat, stdout)
        "args": draw(st.sampled_from([None, "", "fix the login page"])),
        "name_first": draw(st.booleans()),  # <command-name> first (2.x local commands) or <command-message> (1.0)
        "sep": draw(st.sampled_from(["\n", "\n            "])),
        "running": draw(st.booleans()),
        "blocks": draw(st.sampled_from([None, 1, 2])),  # expansion content: a string, or that many text blocks
        "linked": draw(st.booleans()),  # uuid/parentUuid links, or none (then the order decides)
        "between": draw(st.sampled_from(["", "noise", "sidechain"])),  # what sits between echo and expansion
        "then_typed": draw(st.booleans()),  # a typed prompt after the command's turn
    }


def _command_file(tmp_path: Path, c: dict[str, Any]) -> tuple[Path, str | None]:
    f = _File(linked=c["linked"])
    expansion = "Review the diff and list risky changes." + (f"\n\nARGUMENTS: {c['args']}" if c["args"] else "")
    if not c["prompt"]:
        f.user(
            "Caveat: The messages below were generated by the user while running local commands. DO NOT "
            "respond to these messages or otherwise consider them in your response unless the user explicitly "
            "asks you to.",
            isMeta=True,
        )
    f.user(_echo("review" if c["prompt"] else "model", c["args"], c["name_first"], c["sep"], c["running"]))
    if c["between"] == "noise":
        f.rows.append({"type": "progress", "data": {}})
        f.rows.append({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}})
    elif c["between"] == "sidechain":
        f.user("Examine the tests.", side=True, parent=None)
        f.assistant([_text("Examined.")], "side1", side=True)
    if c["prompt"]:
        if c["blocks"] is None:
            content: Any = expansion
        else:
            halves = [expansion] if c["blocks"] == 1 else [expansion[:6], expansion[6:]]
            content = [_text(h) for h in halves]
            expansion = "\n".join(halves)
        f.user(content, isMeta=True)
    else:
        f.user("<local-command-stdout>Set model to sonnet</local-command-stdout>")
        expansion = None  # type: ignore[assignment]
    f.assistant([_read_call("t1", "/w/x.diff")], "m1")
    f.user(_result("t1", "diff --git a/x b/x"), toolUseResult=read_record("/w/x.diff", "diff --git a/x b/x"))
    f.assistant([_text("Two risky changes.")], "m2")
    if c["then_typed"]:
        f.user("thanks, now fix them")
        f.assistant([_text("Fixed.")], "m3")
    return f.write(tmp_path / "cmd.jsonl"), expansion


@settings(
    max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(command_session())
def test_a_prompt_command_s_expansion_is_the_prompt_and_a_local_command_leaves_nothing(tmp_path: Path, c) -> None:
    path, expansion = _command_file(tmp_path, c)
    main = _read(path)[0]
    users = [s.text for s in main.steps if s.role == "user"]
    assert not any("<command-" in u or "local-command" in u or u.startswith("Caveat:") for u in users)
    made = "claude.slash_command_prompt" in main.provenance.transformations
    if c["prompt"]:
        assert main.steps[0].role == "user" and main.steps[0].text == expansion and made
        conv = to_conversation(main, CARD)
        assert isinstance(conv, Conversation), conv
        assert conv.messages[1]["role"] == "user" and _wire_text(conv.messages[1]) == expansion
        assert conv.messages[2]["tool_calls"][0]["function"]["name"] == "read"
    else:
        assert not made
        assert users == (["thanks, now fix them"] if c["then_typed"] else [])


def test_meta_lines_that_expand_no_command_stay_out(tmp_path: Path) -> None:
    """A skill body after a Skill tool result, a caveat right after an echo, an isMeta line after an echo whose
    parent is another line: none is a prompt."""
    f = _File()
    f.user("please review")
    first = f.assistant([{"type": "tool_use", "id": "s1", "name": "Skill", "input": {"skill": "review"}}], "m1")
    f.user(_result("s1", "Launching skill: review"))
    f.user(
        [_text("Base directory for this skill: /home/u/.claude/skills/review\n\nReview carefully.")],
        isMeta=True,
        sourceToolUseID="s1",
    )
    f.user(_echo("clear", "", True, "\n", False))
    f.user(
        "<local-command-caveat>Caveat: The messages below were generated by the user while running local "
        "commands.</local-command-caveat>",
        isMeta=True,
    )
    f.user(_echo("review", None, False, "\n", True))
    f.user([_text("Not this command's expansion.")], isMeta=True, parent=first)
    f.assistant([_text("Done.")], "m2")
    (main,) = _read(f.write(tmp_path / "meta.jsonl"))
    assert [s.text for s in main.steps if s.role == "user"] == ["please review"]
    assert "claude.slash_command_prompt" not in main.provenance.transformations


def test_a_bare_string_in_a_content_list_is_text(tmp_path: Path) -> None:
    f = _File()
    f.user(["first part", _text("second part")])
    f.assistant([_text("ok")], "m1")
    (main,) = _read(f.write(tmp_path / "bare.jsonl"))
    assert main.steps[0].text == "first part\nsecond part"


# ---------------------------------------------------------------------------------------------------- compaction
SUMMARY = (
    "This session is being continued from a previous conversation that ran out of context. The conversation "
    "is summarized below:\nThe user asked for a fix; the tests were run."
)


def _compacted(tmp_path: Path, *, boundary: bool = True, summary: bool = True, meta: dict | None = None) -> Path:
    f = _File()
    f.user("fix the failing test")
    f.assistant([_read_call("t1", "/w/test.log")], "m1")
    f.user(_result("t1", "1 failed"), toolUseResult=read_record("/w/test.log", "1 failed"))
    f.assistant([_text("One test fails.")], "m2")
    if boundary:
        f.line(
            "system",
            None,
            parent=None,
            subtype="compact_boundary",
            content="Conversation compacted",
            compactMetadata={"trigger": "auto", "preTokens": 155000, **(meta or {})},
        )
    if summary:
        f.user(SUMMARY, isCompactSummary=True, isVisibleInTranscriptOnly=True)
    f.assistant([_read_call("t2", "/w/test2.log")], "m3")
    f.user(_result("t2", "1 passed"), toolUseResult=read_record("/w/test2.log", "1 passed"))
    f.assistant([_text("Fixed.")], "m4")
    return f.write(tmp_path / "compacted.jsonl")


def test_a_compaction_starts_a_new_context_whose_prompt_is_the_summary(tmp_path: Path) -> None:
    for layout in ({}, {"boundary": False}):  # 2.x writes a boundary then the summary; the summary alone also splits
        before, after = _read(_compacted(tmp_path, **layout))
        assert [c.id for s in before.steps for c in s.tool_calls] == ["t1"]
        assert after.steps[0].role == "user" and after.steps[0].text == SUMMARY
        assert [c.id for s in after.steps for c in s.tool_calls] == ["t2"]  # nothing from before the compaction
        assert after.root_request_id == before.root_request_id and after.id != before.id
        assert "claude.after_compaction:1/1" in after.provenance.transformations
        assert "claude.compactions_split_off:1" in before.provenance.transformations
        conv = to_conversation(after, CARD)
        assert isinstance(conv, Conversation) and _wire_text(conv.messages[1]) == SUMMARY


def test_context_the_file_does_not_spell_out_ends_the_epoch_and_counts_its_calls(tmp_path: Path) -> None:
    # a partial compaction that kept earlier messages: the next context is unknown until the next compaction
    before, kept = _read(_compacted(tmp_path, meta={"preservedSegment": {"headUuid": "a", "tailUuid": "b"}}))
    assert not kept.steps and kept.skipped_calls == {"context_not_rebuilt": 1}
    assert [c.id for s in before.steps for c in s.tool_calls] == ["t1"]
    # a microcompaction: old tool results are cleared from what the model sees next
    f = _File()
    f.user("fix the failing test")
    f.assistant([_read_call("t1", "/w/test.log")], "m1")
    f.user(_result("t1", "1 failed"))
    f.line(
        "system",
        None,
        subtype="microcompact_boundary",
        content="Context microcompacted",
        microcompactMetadata={"trigger": "auto", "preTokens": 90000, "tokensSaved": 4000, "compactedToolIds": ["t1"]},
    )
    f.assistant([_read_call("t2", "/w/test2.log")], "m2")
    f.assistant([_read_call("t3", "/w/x.diff")], "m2")  # one message over two lines, a call on each
    f.user(_result("t2", "1 passed"))
    f.user(SUMMARY, isCompactSummary=True)  # a full compaction after it: the file spells out the context again
    f.assistant([_text("All green.")], "m3")
    path = f.write(tmp_path / "micro.jsonl")
    main, after = _read(path)
    assert [c.id for s in main.steps for c in s.tool_calls] == ["t1"] and main.skipped_calls == {
        "context_not_rebuilt": 2
    }
    assert "claude.context_not_rebuilt:microcompact_boundary" in main.provenance.transformations
    assert after.steps[0].text == SUMMARY and not after.skipped_calls
    out = tmp_path / "out"
    convert([path], out, CARD, install_dir="/opt/pi")
    doc = json.loads((out / "yield.json").read_text())
    assert doc["identity_holds"] and doc["total"]["calls"] == count_calls("claude_code", path) == 3
    assert doc["total"]["lost"].get("context_not_rebuilt") == 2


# ------------------------------------------------------------------------------------------------ synthetic lines
def test_synthetic_assistant_lines_are_never_labels(tmp_path: Path) -> None:
    f = _File()
    f.user("list the files")
    f.assistant(
        [_text("API Error: 529 Overloaded. This is a server-side issue, usually temporary.")],
        "syn1",
        isApiErrorMessage=True,
    )
    f.rows[-1]["message"]["model"] = "<synthetic>"
    f.user("Continue from where you left off.", isMeta=True)
    f.assistant([_text("No response requested.")], "syn2")
    f.rows[-1]["message"]["model"] = "<synthetic>"
    f.user("list the files again")
    f.assistant([_read_call("t1", "/w/ls.txt")], "m1")
    f.user(_result("t1", "a.py"), toolUseResult=read_record("/w/ls.txt", "a.py"))
    f.assistant([_text("One file: a.py.")], "m2")
    (traj,) = _read(f.write(tmp_path / "synthetic.jsonl"))
    assert [(s.role, s.stop_reason) for s in traj.steps if s.role == "assistant"] == [
        ("assistant", "error"),
        ("assistant", None),
        ("assistant", None),
    ]
    assert "claude.drop_synthetic_assistant" in traj.provenance.transformations
    conv = to_conversation(traj, CARD)
    assert isinstance(conv, Conversation), conv
    texts = [m.get("content") for m in conv.messages if m["role"] == "assistant"]
    assert not any("API Error" in (t or "") or t == "No response requested." for t in texts)
    assert [m["role"] for m in conv.messages] == ["system", "user", "user", "assistant", "tool", "assistant"]
    assert "drop_aborted_or_error_turn" in conv.meta.transformations
