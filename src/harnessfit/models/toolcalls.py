"""Tool calls in model text: find ``<tool_call>…</tool_call>`` blocks (the Hermes/ChatML training format) and turn
them into OpenAI ``tool_calls`` without touching the arguments.

Why keep the arguments byte-for-byte: the eval measures what the model actually wrote. If a model writes
``"arguments": "{\\"path\\": \\"a.txt\\"}"`` (a JSON string holding an object — double encoding), the wire
``arguments`` is that string's JSON text, quotes and backslashes included, so Pi's validator rejects it exactly as it
would reject a real provider's double-encoded call. Re-serialising here would silently repair (or break) the model.

A block whose text is not one JSON object with a string ``name`` is not a call: its raw text stays in the assistant
``content`` (Pi then sees a text reply with no call, which is what the model really produced).

Why under ``models``: the ``<tool_call>`` block is the model's side of the training template (``models.templates``
writes it, this reads it back), and both the server (``serve``) and the GRPO rewards (``rewards``) parse completions
with it; living here, neither has to import the other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["OPEN_TAG", "CLOSE_TAG", "ParsedToolCall", "parse_tool_block", "split_tool_calls", "ToolCallStream"]

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"


@dataclass(frozen=True)
class ParsedToolCall:
    """One call as the model wrote it: ``arguments`` is the raw JSON text of the arguments value (``"{}"`` if absent)."""

    name: str
    arguments: str


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _top_level_members(text: str) -> dict[str, tuple[object, str]] | None:
    """Members of the single JSON object in ``text``: key → (decoded value, raw value text). None if not one object."""
    i = _skip_ws(text, 0)
    if i >= len(text) or text[i] != "{":
        return None
    i = _skip_ws(text, i + 1)
    members: dict[str, tuple[object, str]] = {}
    try:
        if i < len(text) and text[i] == "}":
            i += 1
        else:
            while True:
                if i >= len(text) or text[i] != '"':
                    return None
                key, i = _DECODER.raw_decode(text, i)
                i = _skip_ws(text, i)
                if i >= len(text) or text[i] != ":":
                    return None
                start = _skip_ws(text, i + 1)
                value, end = _DECODER.raw_decode(text, start)
                members[key] = (value, text[start:end])
                i = _skip_ws(text, end)
                if i < len(text) and text[i] == ",":
                    i = _skip_ws(text, i + 1)
                    continue
                if i < len(text) and text[i] == "}":
                    i += 1
                    break
                return None
    except json.JSONDecodeError:
        return None
    if _skip_ws(text, i) != len(text):
        return None
    return members


def parse_tool_block(inner: str) -> ParsedToolCall | None:
    """Parse the text between ``<tool_call>`` and ``</tool_call>``; None when it is not a well-formed call.

    Accepts ``{"name": str, "arguments": <any JSON>}`` (``parameters`` is read as an alias, as in some Hermes data).
    The arguments' raw text is returned as written, whatever JSON type it is.
    """
    members = _top_level_members(inner)
    if members is None or "name" not in members:
        return None
    name = members["name"][0]
    if not isinstance(name, str) or not name:
        return None
    raw = members.get("arguments") or members.get("parameters")
    return ParsedToolCall(name=name, arguments=raw[1] if raw is not None else "{}")


def split_tool_calls(text: str) -> tuple[str, list[ParsedToolCall]]:
    """Split a whole completion into (content, calls). Unparseable blocks stay in content verbatim.

    A final block without ``</tool_call>`` (the model stopped right after the JSON) is still a call if its text
    parses completely; a truncated one stays content.
    """
    stream = ToolCallStream()
    pieces: list[str] = []
    calls: list[ParsedToolCall] = []
    for kind, value in [*stream.feed(text), *stream.finish()]:
        if kind == "content":
            pieces.append(value)  # type: ignore[arg-type]
        else:
            calls.append(value)  # type: ignore[arg-type]
    return "".join(pieces), calls


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag`` (text that may still become it)."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


class ToolCallStream:
    """Incremental splitter for streaming: feed text deltas, get ``("content", str)`` and ``("tool_call", call)``
    events. Content is released as soon as it cannot be the start of a ``<tool_call>`` tag; a block is held back
    until its closing tag (or the end) and then released as one call, or as content when it does not parse.

    Whitespace that only separates text from a call (the template's newlines around ``<tool_call>``) is dropped;
    all other text passes through unchanged, in order.
    """

    def __init__(self) -> None:
        self._buf = ""
        self._in_block = False
        self._after_call = False
        self._ws_before = ""  # whitespace cut before the open block: given back if the block is not a call

    def feed(self, delta: str) -> list[tuple[str, object]]:
        self._buf += delta
        events: list[tuple[str, object]] = []
        while True:
            if self._in_block:
                end = self._buf.find(CLOSE_TAG)
                if end < 0:
                    return events
                inner = self._buf[:end]
                self._buf = self._buf[end + len(CLOSE_TAG) :]
                self._in_block = False
                events.extend(self._emit_block(inner, closed=True))
                continue
            start = self._buf.find(OPEN_TAG)
            if start >= 0:
                text = self._buf[:start].rstrip(_WS)
                events.extend(self._emit_content(text))
                self._ws_before = self._buf[len(text) : start]
                self._buf = self._buf[start + len(OPEN_TAG) :]
                self._in_block = True
                continue
            # hold back what may still turn into "<tool_call>" and the whitespace just before it
            held = len(self._buf) - _partial_tag_suffix(self._buf, OPEN_TAG)
            cut = len(self._buf[:held].rstrip(_WS))
            events.extend(self._emit_content(self._buf[:cut]))
            self._buf = self._buf[cut:]
            return events

    def finish(self) -> list[tuple[str, object]]:
        """Flush at the end of generation: an open block is parsed without its closing tag, else becomes content."""
        if self._in_block:
            inner, self._buf, self._in_block = self._buf, "", False
            return self._emit_block(inner, closed=False)
        rest, self._buf = self._buf, ""
        return self._emit_content(rest)

    def _emit_content(self, text: str) -> list[tuple[str, object]]:
        if self._after_call:
            text = text.lstrip(_WS)
        if not text:
            return []
        self._after_call = False
        return [("content", text)]

    def _emit_block(self, inner: str, *, closed: bool) -> list[tuple[str, object]]:
        call = parse_tool_block(inner)
        ws, self._ws_before = self._ws_before, ""
        if call is None:
            return self._emit_content(ws + OPEN_TAG + inner + (CLOSE_TAG if closed else ""))
        self._after_call = True
        return [("tool_call", call)]
