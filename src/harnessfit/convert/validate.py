"""Check a Conversation against the harness card: tools, message shapes, and every call's arguments.

Used by tests and by later stages that read ``conversations.jsonl`` back (a cheap re-check before training).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from harnessfit.core.conversation import Conversation

if TYPE_CHECKING:
    from harnessfit.harness.card import HarnessCard

__all__ = ["validate_conversation", "card_wire_tools"]

_USER_KEYS = ["role", "content"]
_TOOL_KEYS = ["role", "content", "tool_call_id"]


def card_wire_tools(card: HarnessCard) -> list[dict[str, Any]]:
    """The tool list Pi sends: the card's tools that are active by default, in the card's order."""
    active = set(getattr(card, "default_tools", None) or [t["function"]["name"] for t in card.tools])
    return [t for t in card.tools if t["function"]["name"] in active]


def validate_conversation(conv: Conversation | dict[str, Any], card: HarnessCard) -> list[str]:
    """Problems found (``[]`` = valid): tools equal the card's; system first; user content as text parts;
    assistant ``content`` text-or-null with compact-JSON ``tool_calls`` that validate without errors; each tool
    message answers a call of the previous assistant message, every call answered; ends with an answer.

    An exact prefix (``meta.prefix`` set) is checked the same way, except at its end: its last assistant message may
    be a call whose result is not part of it, and it need not end with an answer."""
    c = conv.model_dump(mode="json") if isinstance(conv, Conversation) else conv
    is_prefix = bool((c.get("meta") or {}).get("prefix"))
    problems: list[str] = []
    if c["tools"] != card_wire_tools(card):
        problems.append("tools differ from the card's")
    msgs = c["messages"]
    if not msgs or msgs[0].get("role") != "system" or not isinstance(msgs[0].get("content"), str):
        problems.append("first message is not the system prompt")
    pending: list[str] = []
    for i, m in enumerate(msgs[1:], 1):
        role = m.get("role")
        if role != "tool" and pending:
            problems.append(f"message {i}: calls {pending} unanswered")
            pending = []
        if role == "user":
            ok = (
                list(m) == _USER_KEYS
                and isinstance(m["content"], list)
                and m["content"]
                and all(
                    list(p) == ["type", "text"] and p["type"] == "text" and isinstance(p["text"], str)
                    for p in m["content"]
                )
            )
            if not ok:
                problems.append(f"message {i}: bad user shape")
        elif role == "assistant":
            keys = list(m)
            if keys not in (["role", "content"], ["role", "content", "tool_calls"]):
                problems.append(f"message {i}: assistant keys {keys}")
            if m.get("content") is not None and not (isinstance(m["content"], str) and m["content"]):
                problems.append(f"message {i}: assistant content must be text or null")
            calls = m.get("tool_calls") or []
            if m.get("content") is None and not calls:
                problems.append(f"message {i}: empty assistant message")
            for tc in calls:
                if (
                    list(tc) != ["id", "type", "function"]
                    or tc["type"] != "function"
                    or list(tc["function"]) != ["name", "arguments"]
                ):
                    problems.append(f"message {i}: bad tool call shape")
                    continue
                text = tc["function"]["arguments"]
                try:
                    args = orjson.loads(text)
                except orjson.JSONDecodeError:
                    problems.append(f"message {i}: arguments not JSON")
                    continue
                if not isinstance(args, dict) or orjson.dumps(args).decode() != text:
                    problems.append(f"message {i}: arguments not compact JSON of an object")
                errors = [v for v in card.validate_call(tc["function"]["name"], args) if v.severity == "error"]
                if errors:
                    problems.append(f"message {i}: {tc['function']['name']} {errors[0].code}: {errors[0].detail}")
                pending.append(tc["id"])
        elif role == "tool":
            if list(m) != _TOOL_KEYS or not isinstance(m["content"], str):
                problems.append(f"message {i}: bad tool message shape")
            elif m["tool_call_id"] not in pending:
                problems.append(f"message {i}: tool result answers no pending call")
            else:
                pending.remove(m["tool_call_id"])
        else:
            problems.append(f"message {i}: unexpected role {role!r}")
    last = msgs[-1] if msgs else {}
    if is_prefix:
        if pending and last.get("role") not in ("assistant", "tool"):
            problems.append(f"calls {pending} unanswered before the prefix's end")
        if not any(m.get("role") == "assistant" for m in msgs):
            problems.append("a prefix without a label")
        return problems
    if pending:
        problems.append(f"calls {pending} unanswered at the end")
    if last.get("role") != "assistant" or last.get("tool_calls") or not last.get("content"):
        problems.append("does not end with a final assistant answer")
    return problems
