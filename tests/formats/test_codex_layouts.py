"""Codex rollouts in every layout the CLI has written (synthetic sessions written here, never copied from a trace):
the ``{timestamp, type, payload}`` envelope, the 2025 bare-item JSONL (session meta first, ``record_type`` lines),
the TypeScript CLI's JSON document; every output shape; and what the model saw after a compaction or a rollback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _helpers.raw_calls import count_calls
from harnessfit.convert import convert_trajectory
from harnessfit.core.rejection import Rejection
from harnessfit.core.trajectory import CONTEXT_NOT_REBUILT, Trajectory
from harnessfit.formats.codex.reader import CodexReader
from harnessfit.formats.registry import detect_format
from harnessfit.harness.card import load_card

CARD = load_card("pi", "0.73.1")
CWD = "/home/dev/proj"
TS = "2025-06-01T10:00:00.000Z"


def _out(text: str, code: int = 0) -> str:
    return json.dumps({"output": text, "metadata": {"exit_code": code, "duration_seconds": 0.1}})


def session_items(n_calls: int = 2) -> list[dict[str, Any]]:
    """A small session as response items: injected context, a request, shell calls, a patch, a final answer."""
    items: list[dict[str, Any]] = [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": f"<environment_context>\n  <cwd>{CWD}</cwd>\n</environment_context>"}
            ],
        },
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the greeting"}]},
    ]
    for k in range(n_calls):
        items += [
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "look"}],
                "content": [{"type": "reasoning_text", "text": f"step {k}"}],
                "encrypted_content": None,
            },
            {
                "type": "function_call",
                "name": "shell",
                "call_id": f"c{k}",
                "arguments": json.dumps({"command": ["bash", "-lc", f"cat f{k}.py"], "workdir": CWD}),
            },
            {"type": "function_call_output", "call_id": f"c{k}", "output": _out(f"print({k})\n")},
        ]
    patch = "*** Begin Patch\n*** Update File: f0.py\n@@\n-print(0)\n+print('hi')\n*** End Patch"
    items += [
        {"type": "custom_tool_call", "name": "apply_patch", "call_id": "p1", "input": patch},
        {
            "type": "custom_tool_call_output",
            "call_id": "p1",
            "output": _out("Success. Updated the following files:\nM f0.py\n"),
        },
        {
            "type": "local_shell_call",
            "call_id": "l1",
            "status": "completed",
            "action": {
                "type": "exec",
                "command": ["ls"],
                "timeout_ms": None,
                "working_directory": None,
                "env": None,
                "user": None,
            },
        },
        {"type": "function_call_output", "call_id": "l1", "output": _out("f0.py\n")},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
    ]
    return items


def _meta(**extra: Any) -> dict[str, Any]:
    return {
        "id": "0197a1b2-0000-7000-8000-000000000001",
        "timestamp": TS,
        "instructions": None,
        "git": {"commit_hash": "abc", "branch": "main", "repository_url": "git@example.com:dev/proj.git"},
        **extra,
    }


def write_layout(path: Path, layout: str, items: list[dict[str, Any]], noise: list[int] | None = None) -> Path:
    """``items`` written as Codex wrote them in ``layout``; ``noise``: positions before which the layout's records
    that carry no conversation (state snapshots, events, turn contexts) are inserted."""
    noise = noise or []
    lines: list[Any] = []
    if layout == "ts_json":
        path.write_text(
            json.dumps(
                {"session": {"timestamp": TS, "id": _meta()["id"], "instructions": ""}, "items": items}, indent=2
            )
        )
        return path
    if layout == "envelope":
        lines.append(
            {
                "timestamp": TS,
                "type": "session_meta",
                "payload": _meta(cwd=CWD, originator="codex_cli_rs", cli_version="0.45.0"),
            }
        )
    elif layout == "legacy":
        lines.append(_meta())
    else:  # legacy with record_type lines (late summer 2025)
        lines.append({"record_type": "session_meta", **_meta(cwd=CWD, originator="codex_cli_rs", cli_version="0.30.0")})
    for k, item in enumerate(items):
        if k in noise:
            lines.append(
                {
                    "envelope": {"timestamp": TS, "type": "turn_context", "payload": {"cwd": CWD, "model": "m"}},
                    "legacy": {"record_type": "state"},
                    "record_type": {
                        "record_type": "event",
                        "id": "1",
                        "msg": {"type": "agent_message", "message": "x"},
                    },
                }[layout]
            )
        lines.append({"timestamp": TS, "type": "response_item", "payload": item} if layout == "envelope" else item)
    path.write_text("".join(json.dumps(v) + "\n" for v in lines))
    return path


def _plain(traj: Trajectory) -> list[tuple[Any, ...]]:
    """The steps without reader notes (``meta``): what every layout must agree on."""
    return [
        (s.role, s.text, s.reasoning, [(c.id, c.name, c.arguments) for c in s.tool_calls], s.tool_call_id, s.images)
        for s in traj.steps
    ]


LAYOUTS = ("envelope", "legacy", "record_type", "ts_json")


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=st.sampled_from(LAYOUTS), n_calls=st.integers(0, 3), noise=st.lists(st.integers(0, 14), max_size=4))
def test_every_layout_reads_as_the_same_steps(tmp_path: Path, layout: str, n_calls: int, noise: list[int]) -> None:
    items = session_items(n_calls)
    ref = write_layout(tmp_path / "ref.jsonl", "envelope", items)
    path = write_layout(
        tmp_path / f"rollout-{layout}.{'json' if layout == 'ts_json' else 'jsonl'}", layout, items, noise
    )
    assert CodexReader().detect(path) and detect_format(path) == "codex"
    (want,) = CodexReader().read(ref)
    (got,) = CodexReader().read(path)
    assert isinstance(want, Trajectory) and isinstance(got, Trajectory)
    assert _plain(got) == _plain(want)
    assert [s.role for s in got.steps][:2] == ["user", "assistant"] and got.steps[0].text == "fix the greeting"
    assert got.date == "2025-06-01"
    assert got.repository == (None if layout == "ts_json" else "git@example.com:dev/proj.git")
    assert got.cwd == (None if layout in ("legacy", "ts_json") else CWD)
    assert got.source_harness_version == {"envelope": "0.45.0", "record_type": "0.30.0"}.get(layout)
    outs = [s for s in got.steps if s.role == "tool"]
    assert all(s.meta.get("codex_output") == ("stdout_or_stderr" if layout == "ts_json" else None) for s in outs)


def test_layout_records_that_are_no_conversation_are_counted(tmp_path: Path) -> None:
    path = write_layout(tmp_path / "r.jsonl", "record_type", session_items(1), noise=[1, 3])
    with path.open("a") as fh:
        fh.write(json.dumps({"record_type": "prev_session_meta", **_meta(cwd=CWD)}) + "\n")
        fh.write(json.dumps({"record_type": "state"}) + "\n")
    (traj,) = CodexReader().read(path)
    notes = traj.provenance.transformations
    assert "codex: event_msg_agent_message_ignored x2" in notes and "codex: state_line_ignored x1" in notes


def test_detection_leaves_other_formats_alone(tmp_path: Path) -> None:
    openhands_like = tmp_path / "events.json"
    openhands_like.write_text(
        json.dumps([{"id": 0, "timestamp": TS, "source": "user", "action": "message", "args": {"content": "hi"}}])
    )
    assert not CodexReader().detect(openhands_like)
    meta_without_instructions = tmp_path / "x.jsonl"
    meta_without_instructions.write_text(json.dumps({"id": "a", "timestamp": TS}) + "\n")
    assert not CodexReader().detect(meta_without_instructions)


def test_a_typescript_document_too_large_to_parse_for_detection_is_still_recognised(tmp_path: Path) -> None:
    items = session_items(1) + [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x" * (5 * 1024 * 1024)}]}
    ]
    path = write_layout(tmp_path / "rollout-big.json", "ts_json", items)
    assert CodexReader().detect(path)


def _read(path: Path) -> list[Trajectory]:
    out = list(CodexReader().read(path))
    assert not any(isinstance(o, Rejection) for o in out), out
    return out  # type: ignore[return-value]


def test_output_shapes_and_call_ids(tmp_path: Path) -> None:
    items = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "function_call", "name": "shell", "call_id": "a", "arguments": '{"command":["ls"]}'},
        {"type": "function_call_output", "call_id": "a", "output": [{"type": "input_text", "text": "one text"}]},
        {"type": "function_call", "name": "view_image", "call_id": "b", "arguments": '{"path":"x.png"}'},
        {
            "type": "function_call_output",
            "call_id": "b",
            "output": [
                {"type": "input_text", "text": "image:"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA"},
            ],
        },
        {
            "type": "local_shell_call",
            "call_id": None,
            "status": "completed",
            "action": {"type": "exec", "command": ["ls"]},
        },
        {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "q"}},
        {
            "type": "image_generation_call",
            "id": "ig_1",
            "status": "completed",
            "revised_prompt": "a cat",
            "result": "AAAA",
        },
        {"type": "ghost_snapshot", "ghost_commit": {"id": "c", "parent": None}},
    ]
    path = write_layout(tmp_path / "r.jsonl", "envelope", items)
    (traj,) = _read(path)
    tools = [s for s in traj.steps if s.role == "tool"]
    assert tools[0].text == "one text" and "output_parts" not in tools[0].meta
    assert tools[1].images == 1 and tools[1].meta["output_parts"] == 2
    calls = [c for s in traj.steps for c in s.tool_calls]
    # no call_id and no id: named by the record's position (session meta is record 1)
    assert [c.id for c in calls] == ["a", "b", "codex_record_7", "codex_record_8", "ig_1"]
    assert [c.name for c in calls][2:] == ["local_shell", "web_search", "image_generation"]
    assert count_calls("codex", path) == len(calls)
    assert "codex: response_item_ghost_snapshot_ignored x1" in traj.provenance.transformations


# ------------------------------------------------------------------------------------------- context changes
def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _call(cid: str, cmd: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "function_call",
            "name": "shell",
            "call_id": cid,
            "arguments": json.dumps({"command": ["bash", "-lc", cmd]}),
        },
        {"type": "function_call_output", "call_id": cid, "output": _out(cmd + "\n")},
    ]


def _answer(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def _envelopes(path: Path, records: list[tuple[str, dict[str, Any]]]) -> Path:
    lines = [{"timestamp": TS, "type": "session_meta", "payload": _meta(cwd=CWD, cli_version="0.60.0")}]
    lines += [{"timestamp": TS, "type": t, "payload": p} for t, p in records]
    path.write_text("".join(json.dumps(v) + "\n" for v in lines))
    return path


def _items(*items: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("response_item", i) for i in items]


def _fates(trajs: list[Trajectory]) -> list[str]:
    return [f for t in trajs for f in convert_trajectory(t, CARD).calls.fates]


def test_compaction_with_replacement_history_starts_an_epoch(tmp_path: Path) -> None:
    summary = _user("Another language model started to solve this problem and produced a summary: read a, b")
    records = (
        _items(_user("task one"), *_call("c1", "cat a"), *_call("c2", "cat b"), _answer("read both"))
        + [
            (
                "compacted",
                {
                    "message": "read a, b",
                    "replacement_history": [
                        _user("<environment_context>\n</environment_context>"),
                        _user("task one"),
                        summary,
                    ],
                },
            )
        ]
        + _items(*_call("c3", "cat c"), _answer("done"))
    )
    path = _envelopes(tmp_path / "r.jsonl", records)
    first, second = _read(path)
    assert [c.id for s in first.steps for c in s.tool_calls] == ["c1", "c2"]
    assert [(s.role, s.text) for s in second.steps[:2]] == [
        ("user", "task one"),
        ("user", summary["content"][0]["text"]),
    ]
    assert all(s.meta.get("history_only") for s in second.steps[:2]) and not second.steps[2].meta.get("history_only")
    assert [c.id for s in second.steps for c in s.tool_calls] == ["c3"]  # c1, c2 are no longer in the context
    assert second.root_request_id == first.root_request_id and second.id != first.id
    fates = _fates([first, second])
    assert len(fates) == count_calls("codex", path) == 3 and fates.count("label") == 3


def test_compaction_whose_context_is_unknown_ends_the_prefix(tmp_path: Path) -> None:
    encrypted = {"type": "compaction", "encrypted_content": "gAAAA"}
    for compacted in ({"message": "summary text"}, {"message": "", "replacement_history": [_user("t"), encrypted]}):
        records = (
            _items(_user("task"), *_call("c1", "ls"), _answer("ok"))
            + [("compacted", compacted)]
            + _items(*_call("c2", "ls -a"), *_call("c3", "pwd"), _answer("done"))
        )
        path = _envelopes(tmp_path / "r.jsonl", records)
        (traj,) = _read(path)
        assert [c.id for s in traj.steps for c in s.tool_calls] == ["c1"]
        assert traj.skipped_calls == {CONTEXT_NOT_REBUILT: 2}
        fates = _fates([traj])
        assert len(fates) == count_calls("codex", path) and fates.count(CONTEXT_NOT_REBUILT) == 2
    # an inline encrypted compaction item does the same; a later readable replacement history starts a new epoch
    records = (
        _items(_user("task"), *_call("c1", "ls"), encrypted, *_call("c2", "ls -a"))
        + [("compacted", {"message": "s", "replacement_history": [_user("task"), _user("summary")]})]
        + _items(*_call("c3", "pwd"), _answer("done"))
    )
    first, second = _read(_envelopes(tmp_path / "r2.jsonl", records))
    assert first.skipped_calls == {CONTEXT_NOT_REBUILT: 1} and [c.id for s in second.steps for c in s.tool_calls] == [
        "c3"
    ]


def test_rollback_drops_the_last_user_turns_from_the_context(tmp_path: Path) -> None:
    records = (
        _items(
            _user("one"),
            *_call("c1", "ls"),
            _answer("a"),
            _user("two"),
            *_call("c2", "pwd"),
            _answer("b"),
            _user("three"),
            *_call("c3", "id"),
            _answer("c"),
        )
        + [("event_msg", {"type": "thread_rolled_back", "num_turns": 2})]
        + _items(_user("two again"), *_call("c4", "date"), _answer("d"))
    )
    path = _envelopes(tmp_path / "r.jsonl", records)
    first, second = _read(path)
    assert [s.text for s in second.steps if s.role == "user"] == ["one", "two again"]
    assert [c.id for s in second.steps for c in s.tool_calls] == ["c1", "c4"]
    assert [bool(s.meta.get("history_only")) for s in second.steps] == [True] * 4 + [False] * 4
    fates = _fates([first, second])
    assert len(fates) == count_calls("codex", path) == 4 and fates.count("label") == 4
    # more turns than there are: every user turn goes; none at all: nothing changes
    records = (
        _items(_user("one"), _answer("a"))
        + [("event_msg", {"type": "thread_rolled_back", "num_turns": 5})]
        + _items(_user("new"), _answer("b"))
    )
    first, second = _read(_envelopes(tmp_path / "r2.jsonl", records))
    assert [s.text for s in second.steps] == ["new", "b"]
    records = [("event_msg", {"type": "thread_rolled_back", "num_turns": 1})] + _items(_user("one"), _answer("a"))
    (only,) = _read(_envelopes(tmp_path / "r3.jsonl", records))
    assert "codex: thread_rolled_back_without_effect x1" in only.provenance.transformations


def test_an_epoch_nothing_answered_is_not_yielded(tmp_path: Path) -> None:
    records = _items(_user("task"), *_call("c1", "ls"), _answer("ok")) + [
        ("compacted", {"message": "s", "replacement_history": [_user("task"), _user("summary")]})
    ]
    (traj,) = _read(_envelopes(tmp_path / "r.jsonl", records))
    assert [c.id for s in traj.steps for c in s.tool_calls] == ["c1"]


def test_a_rollout_that_starts_with_a_compaction_has_no_empty_first_epoch(tmp_path: Path) -> None:
    records = [("compacted", {"message": "s", "replacement_history": [_user("task"), _user("summary")]})] + _items(
        *_call("c1", "ls"), _answer("done")
    )
    (traj,) = _read(_envelopes(tmp_path / "r.jsonl", records))
    assert [c.id for s in traj.steps for c in s.tool_calls] == ["c1"] and traj.steps[0].meta["history_only"]


def test_an_output_given_as_an_object_maps_like_its_json_text(tmp_path: Path) -> None:
    from harnessfit.formats.base import MapContext, PiCall
    from harnessfit.formats.codex.mapping import CodexMapping

    body = {"output": "x\n", "metadata": {"exit_code": 2, "duration_seconds": 0.0}}
    items = [
        _user("go"),
        {"type": "function_call", "name": "shell", "call_id": "a", "arguments": json.dumps({"command": ["ls", "x"]})},
        {"type": "function_call_output", "call_id": "a", "output": body},
        _answer("ok"),
    ]
    (traj,) = _read(write_layout(tmp_path / "r.jsonl", "envelope", items))
    call, result = traj.steps[1].tool_calls[0], traj.steps[2]
    out = CodexMapping().map_call(call, result, MapContext(CARD, traj, CWD))
    assert isinstance(out, PiCall) and out.result == "x\n\n\nCommand exited with code 2"


def test_calls_after_an_unreadable_compaction_are_counted_even_with_nothing_before(tmp_path: Path) -> None:
    path = _envelopes(tmp_path / "r.jsonl", [("compacted", {"message": "s"})] + _items(*_call("c1", "ls")))
    (traj,) = _read(path)
    assert traj.steps == [] and traj.skipped_calls == {CONTEXT_NOT_REBUILT: 1}
    assert _fates([traj]) == [CONTEXT_NOT_REBUILT] and count_calls("codex", path) == 1
