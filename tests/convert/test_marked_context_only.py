"""A Pi session can mark an assistant message context only (``formats.pi.entries.CONTEXT_ONLY_ENTRY``: the mistake
``harnessfit synth --retry`` planted): the turn stays on the wire as recorded and is never a label, the turns after
it are, and the call's fate says why. A marker naming no message of the path changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _helpers.pi_sessions import assistant_message, message_entry, tool_result, write_rows
from harnessfit.convert import convert_trajectory
from harnessfit.core import Conversation, Reason
from harnessfit.dataset.exports import decision_points, sft_records
from harnessfit.eval.scripted_models import first_edit, mis_edit, planted_step
from harnessfit.eval.task import ReferenceStep, Task
from harnessfit.formats.pi.entries import CONTEXT_ONLY_ENTRY
from harnessfit.formats.pi.reader import PiReader
from harnessfit.harness.card import load_card
from harnessfit.synth.record import failed_edit

NO_MATCH = (
    "Could not find the exact text in a.py. The old text must match exactly including all whitespace and newlines."
)


def _rows(target: str | None, *, marker_first: bool = False) -> list[dict]:
    """A session: read a.py, an edit that fails, the exact edit, an answer; a marker naming ``target``."""

    def call(cid, name, args):
        return {"type": "toolCall", "id": cid, "name": name, "arguments": args}

    wrong = {"path": "a.py", "edits": [{"oldText": "X = 2\n", "newText": "X = 2\n"}]}
    right = {"path": "a.py", "edits": [{"oldText": "X = 1\n", "newText": "X = 2\n"}]}
    rows = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-01T10:00:00.000Z", "cwd": "/work/p"},
        message_entry("u1", None, {"role": "user", "content": [{"type": "text", "text": "Set X to 2 in a.py."}]}),
        message_entry("a1", "u1", assistant_message([call("c1", "read", {"path": "a.py"})], "toolUse")),
        message_entry("r1", "a1", tool_result("c1", "read", "X = 1\n")),
        message_entry("a2", "r1", assistant_message([call("c2", "edit", wrong)], "toolUse")),
        message_entry("r2", "a2", tool_result("c2", "edit", NO_MATCH, True)),
        message_entry("a3", "r2", assistant_message([call("c3", "edit", right)], "toolUse")),
        message_entry("r3", "a3", tool_result("c3", "edit", "Successfully replaced 1 block(s) in a.py.")),
        message_entry("a4", "r3", assistant_message([{"type": "text", "text": "X is 2 now."}], "stop")),
    ]
    if target is not None:
        marker = {
            "type": "custom",
            "customType": CONTEXT_ONLY_ENTRY,
            "data": {"targetId": target, "why": "planted mistake"},
            "id": "m1",
            "parentId": "a4",
            "timestamp": "2026-11-01T10:00:01Z",
        }
        if marker_first:  # a marker in the middle of the path: the next entry hangs below it
            marker["parentId"] = "r2"
            rows[6] = {**rows[6], "parentId": "m1"}
            rows.insert(6, marker)
        else:
            rows.append(marker)
    return rows


def _convert(tmp_path: Path, rows: list[dict], card, *, reverse_keys: bool = False, newline: str = "\n"):
    path = write_rows(tmp_path / "s.jsonl", rows, reverse_keys=reverse_keys, newline=newline)
    (traj,) = list(PiReader().read(path))
    return convert_trajectory(traj, card)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(marker_first=st.booleans(), reverse_keys=st.booleans(), crlf=st.booleans())
def test_the_marked_turn_is_context_only_and_the_retry_a_label(
    tmp_path: Path, marker_first: bool, reverse_keys: bool, crlf: bool
) -> None:
    """Wherever the marker sits on the path, whatever key order and line ending the file has."""
    card = load_card("pi", "1.6.0")
    rows = _rows("a2", marker_first=marker_first)
    out = _convert(tmp_path, rows, card, reverse_keys=reverse_keys, newline="\r\n" if crlf else "\n")
    conv = out.record
    assert isinstance(conv, Conversation), conv
    roles = [m["role"] for m in conv.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"]
    assert conv.meta.context_only == [4]
    assert conv.messages[5]["content"] == NO_MATCH  # the failed edit's result as recorded
    assert "pi.context_only_marked" in conv.meta.transformations
    row = conv.model_dump(mode="json")
    # read, the retry (seeing the failed edit) and the answer are records; the failed edit is none
    assert [len(r.messages) for r in sft_records(row, "train")] == [2, 6, 8]
    assert [len(d.state) for d in decision_points(row, "train")] == [2, 6, 8]
    assert out.calls.fates == ["label", Reason.marked_context_only.value, "label"]
    assert out.calls.labels == 2


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(["nope", "u1", "r2", "m1", ""]))
def test_a_marker_naming_no_assistant_message_changes_nothing(tmp_path: Path, target: str) -> None:
    card = load_card("pi", "1.6.0")
    plain = _convert(tmp_path, _rows(None), card).record
    marked = _convert(tmp_path, _rows(target), card).record
    assert isinstance(plain, Conversation) and isinstance(marked, Conversation)
    assert marked.meta.context_only is None
    assert marked.messages == plain.messages


def test_failed_edit_names_the_first_edit_pi_answered_with_an_error() -> None:
    rows = _rows(None)[1:]
    assert failed_edit(rows) == [("a2", "planted mistake: an edit that fails (harnessfit synth, retry)")]
    ok = [r for r in rows if r["id"] not in ("a2", "r2")]
    assert failed_edit(ok) == []


def _task(task_id: str) -> Task:
    return Task.model_validate(
        {
            "id": task_id,
            "kind": "edit",
            "prompt": f"Set X to 2 in a.py ({task_id}); check with `python3 check.py`.",
            "validation_command": "python3 check.py",
            "expected_change": [{"path": "a.py", "contains": "X = 2"}],
            "checker": {"command": "python3 -I hf_check.py"},
            "reference": [
                {"tool": "read", "args": {"path": "a.py"}},
                {"tool": "edit", "args": {"path": "a.py", "edits": [{"oldText": "X = 1\n", "newText": "X = 2\n"}]}},
                {"tool": "bash", "args": {"command": "python3 check.py"}},
                {"final": "X is 2.", "expect": "OK"},
            ],
        }
    )


def _body(task, turns: int) -> dict:
    msgs = [{"role": "user", "content": task.prompt}]
    for _ in range(turns):
        msgs += [{"role": "assistant", "content": ""}, {"role": "tool", "content": "OK"}]
    return {"messages": msgs}


def test_the_mis_edit_solver_plants_one_failed_edit_rereads_then_plays_the_reference() -> None:
    seen = set()
    for task_id in ("t-a", "t-b", "t-c", "t-d"):
        task = _task(task_id)
        assert first_edit(task) == 1
        respond = mis_edit([task])
        played = [respond(_body(task, n), 0) for n in range(6)]
        assert played[0].tool_calls == [("read", '{"path":"a.py"}')]
        name, args = played[1].tool_calls[0]
        (wrong,) = json.loads(args)["edits"]
        assert name == "edit" and wrong != {"oldText": "X = 1\n", "newText": "X = 2\n"}
        seen.add("no change" if wrong == {"oldText": "X = 1\n", "newText": "X = 1\n"} else "not found")
        assert wrong in ({"oldText": "X = 1\n", "newText": "X = 1\n"}, {"oldText": "X = 2\n", "newText": "X = 2\n"})
        assert played[2].tool_calls == [("read", '{"path":"a.py"}')]  # after Pi's error: the file again
        assert played[3].tool_calls == [
            ("edit", '{"path":"a.py","edits":[{"oldText":"X = 1\\n","newText":"X = 2\\n"}]}')
        ]
        assert played[4].tool_calls == [("bash", '{"command":"python3 check.py"}')]
        assert played[5].text == "X is 2."
    assert seen == {"no change", "not found"}  # a suite gets both kinds of mistake


def test_a_task_without_an_edit_is_played_as_the_golden_solver() -> None:
    task = _task("t-a").model_copy(update={"reference": [ReferenceStep(final="Nothing to do.")]})
    assert first_edit(task) is None
    assert mis_edit([task])(_body(task, 0), 0).text == "Nothing to do."


def test_the_mis_edit_solver_checks_the_edits_expectation_before_its_mistake() -> None:
    """An edit step's ``expect`` is about the result before it (a recover task's failing check), so the solver
    checks it before planting the mistake, and not again after Pi's error and the re-read."""
    task = _task("t-a")
    steps = list(task.reference)
    steps[1] = steps[1].model_copy(update={"expect": "FAIL"})
    task = task.model_copy(update={"reference": steps})
    respond = mis_edit([task])
    assert "golden solver stopped" in (respond(_body(task, 1), 0).text or "")  # the last result says OK, not FAIL
    fails = {"messages": [*_body(task, 1)["messages"][:-1], {"role": "tool", "content": "FAIL: X is 1"}]}
    assert respond(fails, 0).tool_calls[0][0] == "edit"
    assert respond(_body(task, 3), 0).tool_calls[0][0] == "edit"  # after the re-read: the exact edit, unchecked


def test_a_create_task_gets_an_edit_of_the_missing_file_then_the_write() -> None:
    task = _task("t-a").model_copy(
        update={
            "reference": [
                ReferenceStep(tool="write", args={"path": "b.py", "content": "Y = 1\n"}),
                ReferenceStep(tool="bash", args={"command": "python3 check.py"}),
                ReferenceStep(final="Created b.py.", expect="OK"),
            ]
        }
    )
    assert first_edit(task) is None and planted_step(task) == 0
    played = [mis_edit([task])(_body(task, n), 0) for n in range(4)]
    assert played[0].tool_calls == [("edit", '{"path":"b.py","edits":[{"oldText":"","newText":"Y = 1\\n"}]}')]
    assert played[1].tool_calls == [("write", '{"path":"b.py","content":"Y = 1\\n"}')]  # no re-read: no file yet
    assert played[2].tool_calls == [("bash", '{"command":"python3 check.py"}')]
    assert played[3].text == "Created b.py."
