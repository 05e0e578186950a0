"""What one finished episode recorded, read once for every scorer: the messages the harness reads back from the
episode (``Harness.transcript``: for Pi, its event stream, the session file only as a fallback and a cross-check),
and each tool call judged once — by the harness card's validator (when a card is installed) and by the harness's own
refusal texts in the tool results (``Harness.refusal``: for Pi, validation failed, tool not found, edit input
invalid), which is what the harness really did with the call.

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
from harnessfit.harness.base import Harness, get_harness
from harnessfit.harness.versions import parse_harness

__all__ = ["JudgedCall", "EpisodeRecord", "record_episode", "read_jsonl_tolerant", "load_card_or_none", "text_of"]


def read_jsonl_tolerant(path: Path | None) -> list[dict[str, Any]]:
    """JSON objects of a JSONL file; a truncated or broken line (a killed process) is skipped, not fatal."""
    if path is None:
        return []
    return list(read_jsonl(path, bad_lines="skip", objects_only=True, missing_ok=True))


def load_card_or_none(version: str | None = None, profile: str | None = None, *, harness: str | None = None):
    """The committed card of ``harness`` (a spec; default: the default harness) at ``version`` (default: the spec's,
    else the harness's default) and card ``profile``, or None when no card can be loaded (validity then rests on the
    harness's refusal texts)."""
    try:
        default = parse_harness(harness)[1]
        return get_harness(harness).card(version or default, profile)
    except Exception:  # noqa: BLE001 - a missing/corrupt card must not stop scoring; the harness's texts still count
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

    The harness stores the arguments after parsing the wire text once (Pi does), so the wire text is re-created as
    compact JSON of what was stored (a stored string means the model sent a JSON string: double encoding).
    """
    if card is None:
        return set(), set()
    try:
        violations = card.validate_call(name, dumps_compact_str(arguments))
    except Exception:  # noqa: BLE001 - a validator crash is not the model's fault; fall back to the harness's texts
        return set(), set()
    errors = {str(getattr(v, "code", v)) for v in violations if getattr(v, "severity", "error") == "error"}
    warnings = {str(getattr(v, "code", v)) for v in violations if getattr(v, "severity", "error") != "error"}
    return errors, warnings


@dataclass(frozen=True)
class JudgedCall:
    """One tool call of the agent, judged once: ``problems`` (empty: valid) are the card's error codes, double
    encoding and the harness's refusal; ``repaired`` the card's warnings (the harness repaired the call and ran it);
    ``failed``: the harness ran it and it failed (ENOENT, no match, an exit code) without refusing it."""

    name: str
    arguments: Any
    problems: frozenset[str]
    repaired: frozenset[str]
    double_encoded: bool
    failed: bool
    answered: bool = True  # the harness sent a result for it (a call cut off by a cap has none)


@dataclass
class EpisodeRecord:
    """What the scorers read: the runner's facts, the task, the episode's messages and its judged tool calls, and
    where the session file disagrees with what the runner captured (``mismatch``)."""

    facts: EpisodeFacts
    task: Task
    messages: list[dict[str, Any]]
    calls: list[JudgedCall]
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


def _judge_calls(messages: list[dict[str, Any]], card: Any, refusing_card: Any, harness: Harness) -> list[JudgedCall]:
    results = {m.get("toolCallId"): m for m in messages if m.get("role") == "toolResult"}
    calls = []
    for msg in messages:
        if msg.get("role") != "assistant":
            continue
        for part in msg.get("content") or []:
            if not isinstance(part, dict) or part.get("type") != "toolCall":
                continue
            name, args = str(part.get("name")), harness.sent_arguments(part)
            why, repaired = _card_reasons(card, name, args)
            double = _is_double_encoded(args)
            if double:
                why.add("arguments_double_encoded")
            failed = False
            result = results.get(part.get("id"))
            if result is not None and result.get("isError"):
                refusal = harness.refusal(refusing_card, text_of(result))
                if refusal is not None:
                    why.add(refusal)
                else:
                    failed = True
            calls.append(
                JudgedCall(name, args, frozenset(why), frozenset(repaired), double, failed, answered=result is not None)
            )
    return calls


def record_episode(
    facts: EpisodeFacts, task: Task, run_dir: Path, card: Any = None, harness: str | None = None
) -> EpisodeRecord:
    """Read the episode back once through its harness (``harness``: the spec of the one that ran; default: the
    default harness) and judge its tool calls (``card``: the card of the version that ran; the harness's refusal
    texts come from it, or from its default card)."""
    agent = get_harness(harness)
    session = run_dir / facts.session_file if facts.session_file else None
    read = agent.transcript(run_dir / facts.events_file, session, killed=facts.killed is not None)
    refusing_card = card if hasattr(card, "refused") else load_card_or_none(agent.default_version, harness=harness)
    return EpisodeRecord(
        facts, task, read.messages, _judge_calls(read.messages, card, refusing_card, agent), read.mismatch
    )
