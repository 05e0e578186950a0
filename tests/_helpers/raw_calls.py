"""An independent count of the assistant tool calls in raw trace files, one small counter per format.

Written from each format's own documentation and writer (see ``../shared/traces*/SOURCES.md`` and the format
modules' docstrings), not from harnessfit's readers: it decodes the files with the standard library (``json``'s
``raw_decode`` over the whole text, so any JSONL layout decodes the same; ``yaml.safe_load`` for SWE-agent demos)
and counts the calls an agent made:

- pi: ``toolCall`` blocks of ``assistant`` messages (entries of type ``message``);
- claude_code: ``tool_use`` blocks of ``assistant`` lines, each id once (one API message is split over several
  lines, one block per line);
- codex: ``response_item`` payloads that are calls (``function_call``, ``custom_tool_call``, ``local_shell_call``,
  ``tool_search_call``, ``web_search_call``, ``image_generation_call``: the ``ResponseItem`` call variants of
  ``codex-rs/protocol/src/models.rs``); ``event_msg`` repeats are not calls;
- swe_agent: ``tool_calls`` of ``assistant`` history messages (every attempt of a RetryAgent file; the top-level
  copy of the chosen attempt is not counted again);
- openhands: agent actions that are tool calls (every action event with ``source`` agent, or no source, except
  ``message``/``system`` and the controller's own ``change_agent_state``/``recall``/``condensation``), and V1
  ``ActionEvent``s (``kind`` is the class name, or its dotted module path in SDK builds before 2025-09-19);
- openai_chat: ``tool_calls`` entries and legacy ``function_call`` of assistant messages, LLaMA-Factory v1
  ``tool_call`` content blocks, ShareGPT ``function_call`` turns (a list value is several calls), and the answer of a
  completion log (``response.choices[0].message``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

__all__ = ["count_calls", "decode_all"]

_NOT_CALLS = {"message", "system", "change_agent_state", "recall", "condensation", "condensation_request", "null"}


def decode_all(text: str) -> list[Any]:
    """Every top-level JSON value in ``text`` (any whitespace or none between them); a lone top-level array of
    objects is its elements."""
    dec = json.JSONDecoder()
    out, i, n = [], 0, len(text)
    ws = re.compile(r"\s*")
    while True:
        i = ws.match(text, i).end()
        if i >= n:
            break
        value, i = dec.raw_decode(text, i)
        out.append(value)
    if len(out) == 1 and isinstance(out[0], list):
        return out[0]
    return out


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8-sig")


def _pi(path: Path) -> int:
    n = 0
    for e in decode_all(_text(path)):
        m = e.get("message") if isinstance(e, dict) and e.get("type") == "message" else None
        if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("content"), list):
            n += sum(1 for b in m["content"] if isinstance(b, dict) and b.get("type") == "toolCall")
    return n


def _claude(path: Path) -> int:
    ids: set[str] = set()
    anonymous = 0
    for line in decode_all(_text(path)):
        m = line.get("message") if isinstance(line, dict) and line.get("type") == "assistant" else None
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    if b.get("id"):
                        ids.add(b["id"])
                    else:
                        anonymous += 1
    return len(ids) + anonymous


def _codex(path: Path) -> int:
    kinds = {
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "tool_search_call",
        "web_search_call",
        "image_generation_call",
    }
    return sum(
        1
        for env in decode_all(_text(path))
        if isinstance(env, dict)
        and env.get("type") == "response_item"
        and isinstance(env.get("payload"), dict)
        and env["payload"].get("type") in kinds
    )


def _swe_history(history: Any) -> int:
    return sum(
        len([c for c in m.get("tool_calls") or [] if isinstance(c, dict)])
        for m in history or []
        if isinstance(m, dict) and m.get("role") == "assistant"
    )


def _swe(path: Path) -> int:
    text = _text(path)
    doc = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    if isinstance(doc.get("attempts"), list) and doc["attempts"]:
        return sum(_swe_history(a.get("history")) for a in doc["attempts"] if isinstance(a, dict))
    return _swe_history(doc.get("history"))


def _oh_events(events: list[Any]) -> int:
    n = 0
    for e in events:
        if isinstance(e, list):  # an [action, observation] pair
            n += _oh_events(e[:1])
        elif isinstance(e, dict) and (
            str(e.get("kind")).rsplit(".", 1)[-1] == "ActionEvent"  # early SDK builds: a dotted module path
            or ("action" in e and e.get("source", "agent") == "agent" and e["action"] not in _NOT_CALLS)
        ):
            n += 1
    return n


def _openhands(path: Path) -> int:
    if path.is_dir():
        files = sorted((path / "events").iterdir())
        return _oh_events([json.loads(_text(f)) for f in files if f.suffix == ".json"])
    values = decode_all(_text(path))
    if values and isinstance(values[0], dict) and "history" in values[0]:  # evaluation output: one per line
        return sum(_oh_events(v.get("history") or []) for v in values if isinstance(v, dict))
    return _oh_events(values)


def _chat_messages(messages: list[Any]) -> int:
    n = 0
    for m in messages:
        if not isinstance(m, dict) or m.get("role") != "assistant":
            continue
        n += len([c for c in m.get("tool_calls") or [] if isinstance(c, dict)])
        n += isinstance(m.get("function_call"), dict)
        if isinstance(m.get("content"), list):
            n += sum(1 for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_call")
    return n


def _one_chat(conv: Any) -> int:
    if isinstance(conv, list):
        return _chat_messages(conv)
    if not isinstance(conv, dict):
        return 0
    if isinstance(conv.get("messages"), list):
        n = _chat_messages(conv["messages"])
        choices = (conv.get("response") or {}).get("choices") if isinstance(conv.get("response"), dict) else None
        if choices and isinstance(choices[0], dict):
            n += _chat_messages([choices[0].get("message")])
        return n
    n = 0
    for t in conv.get("conversations") or []:
        if isinstance(t, dict) and t.get("from") == "function_call":
            try:
                v = json.loads(t.get("value") or "")
            except json.JSONDecodeError:
                v = None
            n += len(v) if isinstance(v, list) and v else 1
    return n


def _openai_chat(path: Path) -> int:
    values = decode_all(_text(path))
    if values and all(isinstance(v, dict) and "role" in v for v in values):  # one message list
        return _chat_messages(values)
    return sum(_one_chat(v) for v in values)


_COUNTERS = {
    "pi": _pi,
    "claude_code": _claude,
    "codex": _codex,
    "swe_agent": _swe,
    "openhands": _openhands,
    "openai_chat": _openai_chat,
}


def count_calls(fmt: str, path: Path) -> int:
    """The number of assistant tool calls in one file (or OpenHands folder) of format ``fmt``."""
    return _COUNTERS[fmt](path)
