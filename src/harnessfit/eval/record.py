"""What one finished episode recorded, read once for every scorer: the messages of Pi's event stream (the session
file only as a fallback and a cross-check), and each tool call judged once — by the harness card's validator (when a
card is installed) and by Pi's own refusal texts in the tool results (``HarnessCard.refused``: validation failed,
tool not found, edit input invalid), which is what the harness really did with the call.

It reads the episode only — never the live process or the endpoint — so any results folder can be re-scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from harnessfit.core.jsonio import dumps_compact_str, read_jsonl
from harnessfit.eval.episode import EpisodeFacts
from harnessfit.eval.scoring import SCORERS
from harnessfit.eval.task import Task
from harnessfit.formats.pi.reader import sent_arguments

__all__ = ["ToolCall", "EpisodeRecord", "record_episode", "read_jsonl_tolerant", "episode_messages",
           "session_mismatch", "load_card_or_none", "text_of"]

# the card's refusal key -> the reason counted in ``invalid_by_reason``
_REFUSAL_REASONS = {"validation_failed": "pi_validation_failed", "tool_not_found": "unknown_tool",
                    "edit_empty": "pi_edit_input_invalid"}


def read_jsonl_tolerant(path: Path | None) -> list[dict[str, Any]]:
    """JSON objects of a JSONL file; a truncated or broken line (a killed process) is skipped, not fatal."""
    if path is None:
        return []
    return list(read_jsonl(path, bad_lines="skip", objects_only=True, missing_ok=True))


def _session_messages(session: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["message"] for e in session if e.get("type") == "message" and isinstance(e.get("message"), dict)]


def _event_messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["message"] for e in events if e.get("type") == "message_end" and isinstance(e.get("message"), dict)]


def episode_messages(session: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages in order, from Pi's event stream (``message_end``): the runner captured it from Pi's stdout, which
    the agent's tools do not write. The session file lives in a folder the agent can write (Pi keeps it there and
    hands its path to every bash call as ``PI_SESSION_FILE``), so it is only read when the stream has no message
    at all (a Pi killed before it printed one), and otherwise cross-checked (``session_mismatch``)."""
    return _event_messages(events) or _session_messages(session)


def _fingerprint(msg: dict[str, Any]) -> tuple:
    calls = tuple((p.get("id"), p.get("name"), dumps_compact_str(p.get("arguments")))
                  for p in msg.get("content") or [] if isinstance(p, dict) and p.get("type") == "toolCall")
    return msg.get("role"), calls, msg.get("toolCallId")


def session_mismatch(session: list[dict[str, Any]], events: list[dict[str, Any]], *, killed: bool) -> str | None:
    """Where the session file disagrees with Pi's event stream (roles, tool calls and their arguments, result ids),
    or None. A Pi stopped by a cap may have written one side further than the other: then one must be a prefix of
    the other. A file that was never written (no session) is nothing to compare."""
    a = [_fingerprint(m) for m in _session_messages(session)]
    b = [_fingerprint(m) for m in _event_messages(events)]
    if not a or not b or a == b:
        return None
    n = min(len(a), len(b))
    if killed and a[:n] == b[:n]:
        return None
    at = next((i for i in range(n) if a[i] != b[i]), n)
    return f"message {at}: the session file has {len(a)} messages, Pi's event stream {len(b)}"


def load_card_or_none(version: str | None = None, profile: str | None = None):
    """The committed card of Pi ``version`` (default: the project's default) and card ``profile``, or None when no
    card can be loaded (validity then rests on Pi's texts)."""
    try:
        from harnessfit.harness.card import load_card
        from harnessfit.harness.versions import DEFAULT_PI_VERSION
    except ImportError:
        return None
    try:
        return load_card("pi", version or DEFAULT_PI_VERSION, profile)
    except Exception:  # noqa: BLE001 - a missing/corrupt card must not stop scoring; Pi's own texts still count
        return None


def _is_double_encoded(arguments: Any) -> bool:
    if not isinstance(arguments, str):
        return False
    try:
        inner = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return False
    return isinstance(inner, dict)


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _card_reasons(card: Any, name: str, arguments: Any) -> tuple[set[str], set[str]]:
    """(error codes, warning codes) of the card's validator for a call as the session stored it.

    Pi stores the arguments after parsing the wire text once, so the wire text is re-created as compact JSON of
    what was stored (a stored string means the model sent a JSON string: double encoding).
    """
    if card is None:
        return set(), set()
    try:
        violations = card.validate_call(name, dumps_compact_str(arguments))
    except Exception:  # noqa: BLE001 - a validator crash is not the model's fault; fall back to Pi's texts
        return set(), set()
    errors = {str(getattr(v, "code", v)) for v in violations if getattr(v, "severity", "error") == "error"}
    warnings = {str(getattr(v, "code", v)) for v in violations if getattr(v, "severity", "error") != "error"}
    return errors, warnings


@dataclass(frozen=True)
class ToolCall:
    """One tool call of the agent, judged once: ``problems`` (empty: valid) are the card's error codes, double
    encoding and Pi's refusal; ``repaired`` the card's warnings (Pi repaired the call and ran it); ``failed``: Pi
    ran it and it failed (ENOENT, no match, an exit code) without refusing it."""

    name: str
    arguments: Any
    problems: frozenset[str]
    repaired: frozenset[str]
    double_encoded: bool
    failed: bool
    answered: bool = True  # Pi sent a result for it (a call cut off by a cap has none)


@dataclass
class EpisodeRecord:
    """What the scorers read: the runner's facts, the task, the episode's messages and its judged tool calls, and
    where the session file disagrees with Pi's event stream (``mismatch``)."""

    facts: EpisodeFacts
    task: Task
    messages: list[dict[str, Any]]
    calls: list[ToolCall]
    mismatch: str | None = None
    _values: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def assistants(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("role") == "assistant"]

    def value(self, name: str) -> Any:
        """The value of the registered metric ``name`` for this episode (computed once)."""
        if name not in self._values:
            self._values[name] = SCORERS[name].fn(self)
        return self._values[name]


def _judge_calls(messages: list[dict[str, Any]], card: Any, refusing_card: Any) -> list[ToolCall]:
    results = {m.get("toolCallId"): m for m in messages if m.get("role") == "toolResult"}
    calls = []
    for msg in messages:
        if msg.get("role") != "assistant":
            continue
        for part in msg.get("content") or []:
            if not isinstance(part, dict) or part.get("type") != "toolCall":
                continue
            name, args = str(part.get("name")), sent_arguments(part)
            why, repaired = _card_reasons(card, name, args)
            double = _is_double_encoded(args)
            if double:
                why.add("arguments_double_encoded")
            failed = False
            result = results.get(part.get("id"))
            if result is not None and result.get("isError"):
                refusal = refusing_card.refused(text_of(result)) if refusing_card is not None else None
                if refusal is not None:
                    why.add(_REFUSAL_REASONS.get(refusal, f"pi_{refusal}"))
                else:
                    failed = True
            calls.append(ToolCall(name, args, frozenset(why), frozenset(repaired), double, failed,
                                  answered=result is not None))
    return calls


def record_episode(facts: EpisodeFacts, task: Task, run_dir: Path, card: Any = None) -> EpisodeRecord:
    """Read the episode's event stream and session file once, and judge its tool calls (``card``: the card of the
    Pi that ran; Pi's refusal texts come from it, or from the default card)."""
    events = read_jsonl_tolerant(run_dir / facts.events_file)
    session = read_jsonl_tolerant(run_dir / facts.session_file) if facts.session_file else []
    messages = episode_messages(session, events)
    refusing_card = card if hasattr(card, "refused") else load_card_or_none()
    return EpisodeRecord(facts, task, messages, _judge_calls(messages, card, refusing_card),
                         session_mismatch(session, events, killed=facts.killed is not None))
