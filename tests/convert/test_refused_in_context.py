"""A call Pi refused before running it stays in the context when the session holds the refusal in the target's
words (``formats.pi.mapping.refusal_in_context``): the turn is never a label, the turns after it are, and every
count says so. Anything short of the exact refusal text, or a target that writes no such text, still cuts there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _helpers.pi_sessions import assistant_message, message_entry, tool_result, write_rows
from harnessfit.convert import convert_trajectory
from harnessfit.core import Conversation, Reason, Rejection
from harnessfit.dataset.exports import decision_points, sft_records
from harnessfit.formats.pi.reader import PiReader
from harnessfit.harness.card import load_card

SENT = json.dumps(json.dumps({"path": "a.txt"}))  # what the model sent: a JSON string holding the object


def _refusal(card, name: str = "read", raw: str = SENT) -> str:
    return card.errors["invalid_arguments"].format(name=name, reason=card.errors["arguments_not_object"], raw=raw)


def _session(
    tmp_path: Path,
    refusal: str,
    *,
    stored_error: str | None = None,
    raw: str = SENT,
    reverse_keys: bool = False,
    newline: str = "\n",
) -> Path:
    """A Pi 1.x session: a double-encoded read (stored as ``{}`` + ``argumentsError``) and its refusal, the read
    again with an object, its result, an answer."""
    error = (
        stored_error
        if stored_error is not None
        else f"Tool arguments must be a JSON object\n\nReceived arguments:\n{raw}"
    )

    bad = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {}, "argumentsError": error}
    good = {"type": "toolCall", "id": "c2", "name": "read", "arguments": {"path": "a.txt"}}
    rows = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-01T10:00:00.000Z", "cwd": "/work/p"},
        message_entry("u1", None, {"role": "user", "content": [{"type": "text", "text": "Read a.txt."}]}),
        message_entry("a1", "u1", assistant_message([{"type": "text", "text": "Reading."}, bad], "toolUse")),
        message_entry("r1", "a1", tool_result("c1", "read", refusal, True)),
        message_entry("a2", "r1", assistant_message([good], "toolUse")),
        message_entry("r2", "a2", tool_result("c2", "read", "one\n")),
        message_entry("a3", "r2", assistant_message([{"type": "text", "text": "It says one."}], "stop")),
    ]
    return write_rows(tmp_path / "s.jsonl", rows, reverse_keys=reverse_keys, newline=newline)


def _convert(path: Path, card):
    (traj,) = list(PiReader().read(path))
    return convert_trajectory(traj, card)


def test_the_refused_call_is_context_only_and_the_recovery_is_a_label(tmp_path: Path) -> None:
    card = load_card("pi", "1.6.0")
    out = _convert(_session(tmp_path, _refusal(card)), card)
    conv = out.record
    assert isinstance(conv, Conversation), conv
    roles = [m["role"] for m in conv.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    # on the wire as Pi 1.x replays it: the stored {} (JSON.stringify), then the refusal as recorded
    assert conv.messages[2]["tool_calls"][0]["function"] == {"name": "read", "arguments": "{}"}
    assert conv.messages[2]["content"] == "Reading."
    assert conv.messages[3]["content"] == _refusal(card)
    assert conv.meta.context_only == [2]
    assert "pi.refused_call_in_context" in conv.meta.transformations
    # the refused turn is no record; the retry (with the refusal in its context) and the answer are
    row = conv.model_dump(mode="json")
    sft = list(sft_records(row, "train"))
    assert [len(r.messages) for r in sft] == [4, 6]
    assert sft[0].action["tool_calls"][0]["function"]["arguments"] == '{"path":"a.txt"}'
    assert [len(d.state) for d in decision_points(row, "train")] == [4, 6]
    # every call is accounted for: the refused one is lost as a label, without cutting the others
    assert out.calls.fates == [Reason.arguments_double_encoded.value, "label"]
    assert out.calls.labels == 1


def test_the_json_form_leaves_context_only_out_when_there_is_none(tmp_path: Path) -> None:
    card = load_card("pi", "1.6.0")
    conv = _convert(_session(tmp_path, _refusal(card)), card).record
    assert isinstance(conv, Conversation)
    plain = conv.model_copy(update={"meta": conv.meta.model_copy(update={"context_only": None})})
    assert "context_only" not in plain.model_dump(mode="json")["meta"]
    assert conv.model_dump(mode="json")["meta"]["context_only"] == [2]


@pytest.mark.parametrize(
    "refusal",
    [
        "Invalid arguments for tool read: not the wording",  # another text
        'Validation failed for tool "read":\n  - path: must be string',  # Pi's schema text, not the parse refusal
    ],
)
def test_a_refusal_not_in_the_targets_words_still_cuts(tmp_path: Path, refusal: str) -> None:
    card = load_card("pi", "1.6.0")
    out = _convert(_session(tmp_path, refusal), card)
    assert isinstance(out.record, Rejection) and out.record.reason == Reason.arguments_double_encoded
    assert out.prefix is None and out.calls.labels == 0


def test_text_that_is_no_json_still_cuts(tmp_path: Path) -> None:
    """Text that does not parse is refused with node's own JSON.parse message, which is not re-derived."""
    card = load_card("pi", "1.6.0")
    raw = '{"path": "a.txt"'
    error = f"Unexpected end of JSON input\n\nReceived arguments:\n{raw}"
    out = _convert(_session(tmp_path, f'Invalid arguments for tool "read": {error}', stored_error=error), card)
    assert isinstance(out.record, Rejection), out.record


def test_a_target_that_writes_no_such_refusal_cuts(tmp_path: Path) -> None:
    """0.82.0 stores the string itself and answers otherwise: its card has no parse refusal, so nothing is kept."""
    newest, older = load_card("pi", "1.6.0"), load_card("pi", "0.82.0")
    assert "invalid_arguments" not in older.errors
    out = _convert(_session(tmp_path, _refusal(newest)), older)
    assert isinstance(out.record, Rejection) and out.record.reason == Reason.arguments_double_encoded


NOT_OBJECTS = st.one_of(
    st.text(max_size=40), st.integers(), st.booleans(), st.none(), st.lists(st.integers(), max_size=3)
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=NOT_OBJECTS, reverse_keys=st.booleans(), crlf=st.booleans())
def test_any_json_that_is_no_object_is_kept_whatever_the_layout(tmp_path: Path, value, reverse_keys, crlf) -> None:
    """Whatever JSON value that is not an object the model sent (pi-ai refuses each alike), in whatever key order and
    line ending the file has, the refused turn is context only and the retry a label."""
    card = load_card("pi", "1.6.0")
    raw = json.dumps(value)
    path = _session(
        tmp_path, _refusal(card, raw=raw), raw=raw, reverse_keys=reverse_keys, newline="\r\n" if crlf else "\n"
    )
    out = _convert(path, card)
    assert isinstance(out.record, Conversation), out.record
    assert out.record.meta.context_only == [2]
    assert out.calls.fates == [Reason.arguments_double_encoded.value, "label"]
