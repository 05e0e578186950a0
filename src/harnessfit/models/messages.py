"""OpenAI-wire chat messages → the messages a training chat template renders. The ONE conversion that the audit
(``tokens/render.py``, hence training) and the built-in server (``serve/protocol.py``) both use, so a served prompt
is token-for-token the prompt a record was trained on.

Why each rule:

- **List content → one string, text parts joined with "\\n".** Pi sends user content as a list of text parts
  (one per text block). A template renders a string, so the parts must be flattened, and both sides must flatten
  the same way. "\\n" is what the model actually sees from the servers it is deployed on: vLLM (our GPU backend)
  flattens text parts with "\\n" for string-content templates, and Pi itself joins text blocks with "\\n"
  wherever it flattens them (tool results on every provider, user text on Anthropic). OpenAI's own API does not
  document its joiner. A single part — the usual case — is its text unchanged under any joiner. Only text parts
  are accepted; anything else (images) is a ``MessageError``.
- **``null`` content → "".** Pi sends ``null`` for an assistant turn that only calls tools.
- **Tool-call ``arguments`` text → the parsed JSON value.** Templates render arguments as JSON objects; a model
  that double-encoded (a JSON string holding JSON) keeps a *string*, so the template re-renders exactly what it
  wrote and the double encoding stays visible. Text that is not JSON stays text.
- **``developer`` → ``system``.** Pi uses ``developer`` for reasoning models; chat templates know ``system``.
- **Only the keys templates read are kept**: ``role``, ``content``, ``tool_calls`` (``id`` when present, ``type``,
  ``function.name``, ``function.arguments``), and for tool results ``tool_call_id`` and ``name``. Replayed
  thinking (``reasoning_content``) of earlier turns is dropped, as the audit does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "PART_JOINER",
    "MessageError",
    "content_text",
    "parse_arguments",
    "to_template_message",
    "to_template_messages",
]

PART_JOINER = "\n"


class MessageError(ValueError):
    """A message the template cannot be given (non-text content part, malformed tool call); ``where`` locates it."""

    def __init__(self, where: str, detail: str) -> None:
        super().__init__(f"{where}: {detail}")
        self.where = where
        self.detail = detail


def content_text(content: Any, *, where: str = "content") -> str:
    """The text a message's ``content`` means: a string as is, ``None`` as "", a list of text parts joined with
    ``PART_JOINER`` (see the module docstring). Raises ``MessageError`` for a non-text part."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for j, part in enumerate(content):
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and part.get("type", "text") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise MessageError(f"{where}[{j}]", f"only text parts are supported (got type {kind!r})")
        return PART_JOINER.join(parts)
    raise MessageError(where, f"content must be a string, a list of text parts or null, not {type(content).__name__}")


def parse_arguments(text: Any) -> Any:
    """Tool-call ``arguments`` (JSON text on the wire) → the value the template renders: the parsed JSON (an object
    normally; a string when the model double-encoded — kept a string, never decoded twice); text that is not JSON
    stays text (so does ""); a value that is already parsed (not a string) is returned as is; ``None`` (no
    arguments at all) → ``{}``."""
    if text is None:
        return {}
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _tool_call(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        raise MessageError(where, "a tool call must be an object")
    fn = call.get("function")
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise MessageError(f"{where}.function", "a tool call needs function.name")
    out: dict[str, Any] = {}
    if call.get("id") is not None:
        out["id"] = call["id"]
    out["type"] = "function"
    out["function"] = {"name": fn["name"], "arguments": parse_arguments(fn.get("arguments"))}
    return out


def to_template_message(msg: Mapping[str, Any], *, where: str = "message") -> dict[str, Any]:
    """One wire message → template form (see the module docstring)."""
    role = msg.get("role")
    if not isinstance(role, str):
        raise MessageError(f"{where}.role", "missing role")
    out: dict[str, Any] = {
        "role": "system" if role == "developer" else role,
        "content": content_text(msg.get("content"), where=f"{where}.content"),
    }
    calls = msg.get("tool_calls")
    if calls:
        out["tool_calls"] = [_tool_call(c, f"{where}.tool_calls[{k}]") for k, c in enumerate(calls)]
    if role == "tool":
        if msg.get("tool_call_id") is not None:
            out["tool_call_id"] = msg["tool_call_id"]
        if msg.get("name"):
            out["name"] = msg["name"]
    return out


def to_template_messages(messages: Iterable[Mapping[str, Any]], *, where: str = "messages") -> list[dict[str, Any]]:
    """Wire messages (dicts, as Pi sends them or as an SFT record stores them) → template messages."""
    return [to_template_message(m, where=f"{where}[{i}]") for i, m in enumerate(messages)]
