"""``harness/pi/session.py`` reads a session's tool-call arguments and system text with the same rules as the source
format ``formats/pi/entries.py`` (the harness may not import formats: formats imports harness). Until that package
imports these, this keeps the two equal on every case the rules distinguish."""

from __future__ import annotations

from harnessfit.formats.pi import entries
from harnessfit.harness.pi import session

_RECEIVED = "\n\nReceived arguments:\n"
CALLS = [
    {"arguments": {"path": "a.txt"}},
    {"arguments": '{"path": "a.txt"}'},  # 0.x: a JSON string holding an object stays a string
    {"arguments": {}, "argumentsError": "Expected object" + _RECEIVED + '"{\\"path\\": 1}"'},
    {"arguments": {}, "argumentsError": "Unexpected end" + _RECEIVED + '{"path": "a'},
    {"arguments": {}, "argumentsError": "no marker here"},
    {},
]
SYSTEMS = [
    {"role": "system", "content": [], "sections": {"base": "You are", "tools": "tools", "empty": None}},
    {"role": "system", "content": [{"type": "text", "text": "hello"}, {"type": "image"}]},
    {"role": "system", "content": "plain", "sections": {"x": "more"}},
    {"role": "system", "content": None},
]


def test_the_harness_reads_arguments_and_system_text_as_the_source_format_does() -> None:
    for call in CALLS:
        assert session.call_arguments(call) == entries.call_arguments(call), call
        assert session.sent_arguments(call) == entries.sent_arguments(call), call
    for msg in SYSTEMS:
        assert session.system_text(msg) == entries.system_text(msg), msg
