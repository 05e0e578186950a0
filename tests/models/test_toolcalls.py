"""The tool-call parser on strings: calls found, arguments kept byte-for-byte, bad blocks left as content."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessfit.models.toolcalls import ParsedToolCall, ToolCallStream, parse_tool_block, split_tool_calls


def test_object_arguments_kept_exactly_as_written() -> None:
    text = 'Let me look.\n<tool_call>\n{"name": "read", "arguments": {"path":  "a.txt", "limit": 10}}\n</tool_call>'
    content, calls = split_tool_calls(text)
    assert content == "Let me look."
    assert calls == [ParsedToolCall(name="read", arguments='{"path":  "a.txt", "limit": 10}')]


def test_double_encoded_arguments_stay_a_json_string() -> None:
    text = '<tool_call>\n{"name": "read", "arguments": "{\\"path\\": \\"a.txt\\"}"}\n</tool_call>'
    content, calls = split_tool_calls(text)
    assert content == ""
    assert len(calls) == 1
    wire = calls[0].arguments
    assert wire == '"{\\"path\\": \\"a.txt\\"}"'
    decoded = json.loads(wire)
    assert isinstance(decoded, str)  # what Pi will see: a string, not an object
    assert json.loads(decoded) == {"path": "a.txt"}


def test_two_calls_and_missing_arguments() -> None:
    text = (
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "noargs"}\n</tool_call>'
    )
    content, calls = split_tool_calls(text)
    assert content == ""
    assert [c.name for c in calls] == ["bash", "noargs"]
    assert calls[1].arguments == "{}"


@pytest.mark.parametrize(
    "block",
    [
        '{"name": "read", "arguments": {"path": "a.txt"}',  # truncated JSON
        '{"arguments": {"path": "a.txt"}}',  # no name
        '{"name": 3, "arguments": {}}',  # name not a string
        '["read", {}]',  # not an object
        '{"name": "read"} trailing',  # text after the object
    ],
)
def test_unparseable_block_stays_in_content(block: str) -> None:
    text = f"before <tool_call>{block}</tool_call> after"
    content, calls = split_tool_calls(text)
    assert calls == []
    assert content == text
    assert parse_tool_block(block) is None


def test_unclosed_final_block_is_a_call_only_when_complete() -> None:
    _, calls = split_tool_calls('<tool_call>\n{"name": "read", "arguments": {"path": "x"}}\n')
    assert calls == [ParsedToolCall("read", '{"path": "x"}')]
    content, calls = split_tool_calls('<tool_call>\n{"name": "read", "argu')
    assert calls == [] and content == '<tool_call>\n{"name": "read", "argu'


def test_text_that_only_looks_like_a_tag_is_released() -> None:
    content, calls = split_tool_calls("a <tool> b <tool_")
    assert calls == [] and content == "a <tool> b <tool_"


def test_streaming_holds_back_a_block_and_releases_text_early() -> None:
    stream = ToolCallStream()
    assert stream.feed("Hello") == [("content", "Hello")]
    assert stream.feed(" <tool") == []  # might be the start of a tag
    assert stream.feed('_call>\n{"name": "read", ') == []
    events = stream.feed('"arguments": {"path": "a"}}\n</tool_call>')
    assert events == [("tool_call", ParsedToolCall("read", '{"path": "a"}'))]
    assert stream.finish() == []


_pieces = st.sampled_from(list('ab <>/_{}"\\:,\n') + ["<tool_call>", "</tool_call>", '{"name": "r"}', '"arguments": '])
_texts = st.lists(_pieces, max_size=25).map("".join)


@pytest.mark.slow  # a 200-example property test: 5 s
@settings(max_examples=200, deadline=None)
@given(_texts, st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=20))
def test_streaming_equals_whole_text(text: str, cuts: list[int]) -> None:
    """Feeding any split of the text gives the same content and calls as splitting it at once."""
    stream = ToolCallStream()
    events = []
    i = 0
    for n in cuts * (len(text) // max(1, sum(cuts)) + 1):
        if i >= len(text):
            break
        events += stream.feed(text[i : i + n])
        i += n
    events += stream.finish()
    content = "".join(v for k, v in events if k == "content")
    calls = [v for k, v in events if k == "tool_call"]
    assert (content, calls) == split_tool_calls(text)
