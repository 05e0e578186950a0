"""Scorers: turn one episode's files (event stream, Pi session, runner facts) into ``EpisodeMetrics``.

They read the episode only — never the live process or the endpoint — so any results folder can be re-scored.
Tool-call validity combines two sources: the harness card's validator (when a card is installed) and Pi's own
refusal texts in the tool results (``HarnessCard.refused``: validation failed, tool not found, edit input
invalid), which is what the harness really did with the call.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from harnessfit.core.jsonio import dumps_compact_str, read_jsonl
from harnessfit.eval.episode import FAILURES, INTEGRITY_FLAGS, EpisodeFacts, EpisodeMetrics
from harnessfit.eval.task import Task
from harnessfit.formats.pi.reader import sent_arguments

__all__ = ["read_jsonl_tolerant", "episode_messages", "session_mismatch", "score_episode", "load_card_or_none"]

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


def _text_of(message: dict[str, Any]) -> str:
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


def _normalise(cmd: str) -> str:
    return " ".join(cmd.split())


def score_episode(facts: EpisodeFacts, task: Task, run_dir: Path, card: Any = None) -> EpisodeMetrics:
    """Metrics of one finished episode (``facts.status`` must be ``"success"``)."""
    events = read_jsonl_tolerant(run_dir / facts.events_file)
    session = read_jsonl_tolerant(run_dir / facts.session_file) if facts.session_file else []
    messages = episode_messages(session, events)
    mismatch = session_mismatch(session, events, killed=facts.killed is not None)
    assistants = [m for m in messages if m.get("role") == "assistant"]
    results = {m.get("toolCallId"): m for m in messages if m.get("role") == "toolResult"}

    total = valid = double = 0
    reasons: Counter[str] = Counter()
    pi_errors: Counter[str] = Counter()
    warnings: Counter[str] = Counter()
    validation_used = False
    refusing_card = card if hasattr(card, "refused") else load_card_or_none()
    wanted = _normalise(task.validation_command or "")  # Harbor tasks name no validation command
    for msg in assistants:
        for part in msg.get("content") or []:
            if not isinstance(part, dict) or part.get("type") != "toolCall":
                continue
            total += 1
            name, args = str(part.get("name")), sent_arguments(part)
            why, repaired = _card_reasons(card, name, args)
            warnings.update(repaired)
            if _is_double_encoded(args):
                why.add("arguments_double_encoded")
                double += 1
            result = results.get(part.get("id"))
            if result is not None and result.get("isError"):
                refusal = refusing_card.refused(_text_of(result)) if refusing_card is not None else None
                if refusal is not None:
                    why.add(_REFUSAL_REASONS.get(refusal, f"pi_{refusal}"))
                else:
                    pi_errors[name] += 1  # a valid call whose execution failed (ENOENT, no match, exit code)
            if why:
                reasons.update(why)
            else:
                valid += 1
            if wanted and name == "bash" and isinstance(args, dict) and wanted in _normalise(
                    str(args.get("command", ""))):
                validation_used = True

    last = assistants[-1] if assistants else None
    stop_reason = last.get("stopReason") if last else None
    has_calls = bool(last) and any(
        isinstance(p, dict) and p.get("type") == "toolCall" for p in last.get("content") or []
    )
    finished = bool(last) and stop_reason == "stop" and not has_calls and bool(_text_of(last).strip())
    finished = finished and facts.killed is None and not facts.turn_cap_hit and facts.cap_hit is None
    checker_passed = facts.checker_exit_code == 0
    endpoint_error = stop_reason == "error"
    usage = [m.get("usage") or {} for m in assistants]
    changed = bool(facts.expected_change)
    metrics = dict(
        # the independent checker, the task's expected change and a final answer: a checker fooled from inside (a
        # module that exits 0 on import) without the change is no complete loop (and is flagged, below)
        complete_loop=checker_passed and changed and finished,
        expected_change=changed,
        validation_used=validation_used,
        finished_with_response=finished,
        checker_passed=checker_passed,
        tool_calls_total=total,
        tool_calls_valid=valid,
        tool_calls_invalid=total - valid,
        invalid_by_reason=dict(sorted(reasons.items())),
        pi_tool_errors=dict(sorted(pi_errors.items())),
        repaired_by_reason=dict(sorted(warnings.items())),
        double_encoded_arguments=double,
        runaway=facts.killed == "output_cap",
        timed_out=facts.killed == "wall_clock",
        turn_cap_hit=facts.turn_cap_hit,
        endpoint_error=endpoint_error,
        turns=sum(1 for m in assistants if m.get("stopReason") != "aborted" or _text_of(m) or m.get("content")),
        tokens_input=sum(int(u.get("input") or 0) for u in usage),
        tokens_output=sum(int(u.get("output") or 0) for u in usage),
        tokens_total=sum(int(u.get("totalTokens") or 0) for u in usage),
        wall_seconds=round(facts.wall_seconds, 3),
        stop_reason=stop_reason,
    )
    failure = None
    if not metrics["complete_loop"]:
        checks = {
            **{name: facts.cap_hit == name for name in FAILURES if name.startswith("cap_")},
            "runaway": metrics["runaway"],
            "timeout": metrics["timed_out"],
            "endpoint_error": endpoint_error,
            "turn_cap": facts.turn_cap_hit,
            "double_encoded_arguments": double > 0,
            "invalid_tool_calls": total - valid > 0,
            "no_final_response": not finished,
            "checker_failed": not checker_passed,
            "expected_change_missing": not changed,
        }
        failure = next((name for name, hit in checks.items() if hit), "checker_failed")
    flag = "session_file_differs_from_events" if mismatch else integrity_flag(facts)
    return EpisodeMetrics(**metrics, failure=failure, integrity_flag=flag, integrity_detail=mismatch)


def integrity_flag(facts: EpisodeFacts) -> str | None:
    """Which way the checker and the expected change disagree, or None when they agree (or no predicate ran).

    A checker can be fooled from inside — the module under test exits 0 on import — and a predicate can be too
    strict; either way a reader should look at the episode. A complete loop needs both, so neither kind counts.
    """
    if facts.expected_change is None or facts.checker_exit_code is None:
        return None
    passed = facts.checker_exit_code == 0
    if passed and not facts.expected_change:
        return INTEGRITY_FLAGS[0]
    if facts.expected_change and not passed:
        return INTEGRITY_FLAGS[1]
    return None
