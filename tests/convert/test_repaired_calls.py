"""Repaired-call policy: calls Pi runs only after repairing them are written in the canonical form Pi executes,
with a ``repaired:<code>`` transformation; the canonical call validates cleanly."""

from __future__ import annotations

import json

from harnessfit.convert import validate_conversation
from harnessfit.convert.wire import to_conversation
from harnessfit.core import Conversation
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.harness.card import load_card

CARD = load_card("pi", "0.73.1")


def _convert(name: str, arguments: str, result: str) -> Conversation:
    steps = [
        Step(role="user", text="do it"),
        Step(role="assistant", tool_calls=[ToolCall(id="c1", name=name, arguments=arguments)]),
        Step(role="tool", tool_call_id="c1", text=result),
        Step(role="assistant", text="Done."),
    ]
    traj = Trajectory(
        id="t",
        source="openai_chat",
        steps=steps,
        cwd="/w",
        date="2026-01-01",
        root_request_id="r",
        provenance={"format": "openai_chat", "file": "f", "sha256": "0"},
    )
    conv = to_conversation(traj, CARD)
    assert isinstance(conv, Conversation), conv
    assert validate_conversation(conv, CARD) == []
    return conv


def _call(conv: Conversation) -> tuple[str, str]:
    fn = conv.messages[2]["tool_calls"][0]["function"]
    assert CARD.validate_call(fn["name"], fn["arguments"]) == []  # canonical: no warning left
    return fn["name"], fn["arguments"]


def test_string_number_and_ignored_property_become_canonical() -> None:
    conv = _convert("read", '{"path":"a.py","offset":"10","limit":"5","encoding":"utf-8"}', "x")
    assert _call(conv) == ("read", '{"path":"a.py","offset":10,"limit":5}')
    assert "repaired:coerced_type" in conv.meta.transformations
    assert "repaired:ignored_property" in conv.meta.transformations


def test_legacy_edit_and_edits_as_json_string_become_edits_list() -> None:
    legacy = _convert(
        "edit",
        json.dumps({"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}),
        "Successfully replaced 1 block(s) in a.py.",
    )
    assert _call(legacy) == ("edit", '{"path":"a.py","edits":[{"oldText":"x = 1","newText":"x = 2"}]}')
    assert "repaired:legacy_edit_arguments" in legacy.meta.transformations

    as_string = _convert(
        "edit",
        json.dumps({"edits": json.dumps([{"newText": "b", "oldText": "a"}]), "path": "a.py"}),
        "Successfully replaced 1 block(s) in a.py.",
    )
    assert _call(as_string) == ("edit", '{"path":"a.py","edits":[{"oldText":"a","newText":"b"}]}')
    assert "repaired:edits_json_string" in as_string.meta.transformations


def test_clean_calls_keep_their_exact_arguments() -> None:
    conv = _convert("bash", '{"command":"ls","timeout":5}', "a\nb")
    assert _call(conv) == ("bash", '{"command":"ls","timeout":5}')
    assert not any(t.startswith("repaired:") for t in conv.meta.transformations)
