"""harnessfit.models.messages: the one wire → template conversion shared by the audit and the server."""

from __future__ import annotations

import json

import pytest

from harnessfit.models.messages import (
    PART_JOINER,
    MessageError,
    content_text,
    parse_arguments,
    to_template_messages,
)


def test_content_text_forms() -> None:
    assert content_text(None) == ""
    assert content_text("abc") == "abc"
    assert content_text([{"type": "text", "text": "one"}]) == "one"
    assert content_text([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]) == "a" + PART_JOINER + "b"
    assert PART_JOINER == "\n"
    with pytest.raises(MessageError, match=r"content\[1\]: only text parts"):
        content_text([{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}])
    with pytest.raises(MessageError):
        content_text(42)


def test_parse_arguments_keeps_double_encoding_and_raw_text() -> None:
    assert parse_arguments('{"path":"a.py","limit":5}') == {"path": "a.py", "limit": 5}
    inner = '{"path":"a.py"}'
    assert parse_arguments(json.dumps(inner)) == inner  # a JSON string holding JSON stays that string
    assert parse_arguments('{"path": "a.py"') == '{"path": "a.py"'  # not JSON: the text as written
    assert parse_arguments("") == ""
    assert parse_arguments(None) == {}
    assert parse_arguments({"x": 1}) == {"x": 1}


def test_to_template_messages_canonical_shape() -> None:
    wire = [
        {"role": "developer", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "hmm",
            "extra": 1,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path":"x"}'}}],
        },
        {"role": "tool", "content": "data", "tool_call_id": "c1"},
    ]
    assert to_template_messages(wire) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": {"path": "x"}}}],
        },
        {"role": "tool", "content": "data", "tool_call_id": "c1"},
    ]
    with pytest.raises(MessageError, match=r"messages\[0\].tool_calls\[0\].function"):
        to_template_messages([{"role": "assistant", "tool_calls": [{"id": "c"}]}])
