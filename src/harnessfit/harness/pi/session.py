"""Reading Pi's session and event messages as the scorer and the report do: a tool call's arguments as the model sent
them, and the text of a Pi 1.x ``system`` message.

The source format ``formats/pi/entries.py`` reads the same fields with the same rules (its ``call_arguments``,
``sent_arguments`` and ``system_text``); once that package imports these, there is one definition.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["call_arguments", "sent_arguments", "system_text"]

_RECEIVED = "\n\nReceived arguments:\n"


def call_arguments(block: dict[str, Any]) -> Any:
    """A tool call's arguments as the model sent them. Pi 1.x stores text it could not parse into an object as
    ``arguments: {}`` plus ``argumentsError: "<reason>\\n\\nReceived arguments:\\n<text as sent>"`` (pi-ai
    ``parseToolCallArguments``)."""
    error = block.get("argumentsError")
    if isinstance(error, str) and _RECEIVED in error:
        return error.split(_RECEIVED, 1)[1]
    return block.get("arguments")


def sent_arguments(block: dict[str, Any]) -> Any:
    """A call's arguments as Pi took them from the model, in one form for every version: Pi 0.x stores the parsed
    value (a JSON string that holds an object stays a string); 1.x stores ``{}`` and the text it could not parse as an
    object in ``argumentsError`` (``call_arguments``), which decoded once is that same value. What eval scores and
    the report shows (double encoding stays visible)."""
    args = call_arguments(block)
    if isinstance(args, str) and isinstance(block.get("argumentsError"), str):
        try:
            return orjson.loads(args)
        except orjson.JSONDecodeError:
            return args
    return args


def system_text(msg: dict[str, Any]) -> str:
    """The text of a Pi 1.x ``system`` message as pi-ai's ``getSystemMessageText`` makes it: the content's text parts,
    then every non-null section, non-empty parts joined by a blank line (the prompt lives in ``sections``)."""
    content = msg.get("content")
    blocks = (
        [{"type": "text", "text": content}]
        if isinstance(content, str)
        else [b for b in content if isinstance(b, dict)]
        if isinstance(content, list)
        else []
    )
    parts = [b.get("text") or "" for b in blocks if b.get("type") == "text"]
    sections = msg.get("sections") if isinstance(msg.get("sections"), dict) else {}
    return "\n\n".join(p for p in ["\n".join(parts), *(v for v in sections.values() if isinstance(v, str))] if p)
