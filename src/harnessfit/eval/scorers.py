"""The built-in metrics of ``eval agent``, one registered scorer each, and ``score_episode``, which composes them.

Each scorer reads what the episode recorded (``EpisodeRecord``, eval/record.py) and nothing live, so any results
folder can be re-scored. The built-in metrics are the fields of ``EpisodeMetrics``; the verdicts — which failure
(the first of ``FAILURE_RULES``, eval/episode.py, that holds) and the integrity flag — come from their values.
The scorers are registered in the order their rates and means appear in results.json.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from harnessfit.eval.episode import FAILURE_RULES, INTEGRITY_FLAGS, EpisodeFacts, EpisodeMetrics, Score
from harnessfit.eval.record import EpisodeRecord, load_card_or_none, read_jsonl_tolerant, record_episode, text_of
from harnessfit.eval.scoring import SCORERS, Unscored, scorer
from harnessfit.eval.task import Task
from harnessfit.models.toolcalls import OPEN_TAG

__all__ = ["read_jsonl_tolerant", "score_episode", "load_card_or_none", "integrity_flag", "BUILTIN_METRICS"]


# --- the outcome: the checker, the expected change, a final answer ---------------------------------------------


@scorer(aggregate="rate", label="Complete loop (checker passed + expected change + final response)")
def complete_loop(ep: EpisodeRecord) -> bool:
    # a checker fooled from inside (a module that exits 0 on import) without the change is no complete loop (and is
    # flagged: integrity_flag)
    return ep.value("checker_passed") and ep.value("expected_change") and ep.value("finished_with_response")


@scorer(aggregate="rate", label="Expected change made")
def expected_change(ep: EpisodeRecord) -> bool:
    return bool(ep.facts.expected_change)


@scorer(aggregate="rate", label="Requested validation command used")
def validation_used(ep: EpisodeRecord) -> bool:
    return bool(_validation_runs(ep))  # Harbor tasks name no validation command: never used


def _validation_runs(ep: EpisodeRecord) -> list[Any]:
    wanted = _normalise(ep.task.validation_command or "")
    return [
        c
        for c in ep.calls
        if wanted
        and c.name == "bash"
        and isinstance(c.arguments, dict)
        and wanted in _normalise(str(c.arguments.get("command", "")))
    ]


@scorer(aggregate="rate", label="Final validation clean (the last validation run passed)")
def final_validation_clean(ep: EpisodeRecord) -> bool:
    runs = _validation_runs(ep)
    return bool(runs) and runs[-1].answered and not runs[-1].problems and not runs[-1].failed


@scorer(aggregate="rate", label="Finished with a response")
def finished_with_response(ep: EpisodeRecord) -> bool:
    last = _last(ep)
    if last is None or ep.value("stop_reason") != "stop" or not text_of(last).strip():
        return False
    if any(isinstance(p, dict) and p.get("type") == "toolCall" for p in last.get("content") or []):
        return False
    if _malformed_calls(last):  # the "answer" is a call the endpoint could not parse, not a reply
        return False
    return ep.facts.killed is None and not ep.facts.turn_cap_hit and ep.facts.cap_hit is None


@scorer(aggregate="rate", label="Independent checker passed")
def checker_passed(ep: EpisodeRecord) -> bool:
    return ep.facts.checker_exit_code == 0


# --- the tool calls ---------------------------------------------------------------------------------------------


MALFORMED = "malformed_tool_call"


def _malformed_calls(message: dict[str, Any]) -> int:
    """Calls written in the served template's markup that did not parse (a ``<tool_call>`` block whose text is not a
    call): the endpoint leaves such a block in the reply's text as the model wrote it (``models.toolcalls``), so Pi
    never sees a call, but the model did try one. Counted as invalid calls (``malformed_tool_call``), as the probes
    count them (``eval/probe/probes.py``)."""
    return text_of(message).count(OPEN_TAG)


def _malformed_total(ep: EpisodeRecord) -> int:
    return sum(_malformed_calls(m) for m in ep.assistants)


@scorer()
def tool_calls_total(ep: EpisodeRecord) -> int:
    return len(ep.calls) + _malformed_total(ep)


@scorer()
def tool_calls_valid(ep: EpisodeRecord) -> int:
    return sum(1 for c in ep.calls if not c.problems)


@scorer()
def tool_calls_invalid(ep: EpisodeRecord) -> int:
    return sum(1 for c in ep.calls if c.problems) + _malformed_total(ep)


@scorer()
def invalid_by_reason(ep: EpisodeRecord) -> dict[str, int]:
    counts = Counter(why for c in ep.calls for why in c.problems)
    if malformed := _malformed_total(ep):
        counts[MALFORMED] += malformed
    return dict(sorted(counts.items()))


@scorer()
def pi_tool_errors(ep: EpisodeRecord) -> dict[str, int]:
    """Calls the harness ran whose execution failed, by tool (the metric keeps its results name)."""
    return dict(sorted(Counter(c.name for c in ep.calls if c.failed).items()))


@scorer()
def repaired_by_reason(ep: EpisodeRecord) -> dict[str, int]:
    """The card's warnings: the harness repaired the call and ran it."""
    return dict(sorted(Counter(why for c in ep.calls for why in c.repaired).items()))


@scorer()
def double_encoded_arguments(ep: EpisodeRecord) -> int:
    return sum(1 for c in ep.calls if c.double_encoded)


_CHANGES_FILES = ("edit", "write")


@scorer(aggregate="rate", label="Repeated a failed call (the same call again, no file changed since)", good=False)
def repeated_failed_call(ep: EpisodeRecord) -> bool:
    """The agent sent a call that Pi had refused or could not run (same tool, same arguments) again, with no
    successful edit or write in between: nothing it could see had changed, so the same answer was coming. Re-running
    a failing check after a successful edit is not a repeat; re-running it with the files untouched is. This is how
    small models spend their turn caps: one failed call, sent until the cap."""
    failed_since_change: set[str] = set()
    for c in ep.calls:
        key = c.name + "\0" + json.dumps(c.arguments, sort_keys=True, default=str)
        if key in failed_since_change:
            return True
        if c.problems or c.failed:
            failed_since_change.add(key)
        elif c.answered and c.name in _CHANGES_FILES:
            failed_since_change.clear()
    return False


# --- the caps and the endpoint (rates in this order) -------------------------------------------------------------


@scorer(aggregate="rate", label="Runaway (output cap hit)", good=False)
def runaway(ep: EpisodeRecord) -> bool:
    return ep.facts.killed == "output_cap"


@scorer(aggregate="rate", label="Turn cap hit", good=False)
def turn_cap_hit(ep: EpisodeRecord) -> bool:
    return ep.facts.turn_cap_hit


@scorer(aggregate="rate", label="Wall-clock cap hit", good=False)
def timed_out(ep: EpisodeRecord) -> bool:
    return ep.facts.killed == "wall_clock"


@scorer(aggregate="rate", label="Endpoint error", good=False)
def endpoint_error(ep: EpisodeRecord) -> bool:
    return ep.value("stop_reason") == "error"


# --- the effort (means in this order) ----------------------------------------------------------------------------


@scorer(aggregate="mean")
def turns(ep: EpisodeRecord) -> int:
    return sum(1 for m in ep.assistants if m.get("stopReason") != "aborted" or text_of(m) or m.get("content"))


@scorer(aggregate="mean")
def tokens_total(ep: EpisodeRecord) -> int:
    return _usage_sum(ep, "totalTokens")


@scorer(aggregate="mean")
def tokens_output(ep: EpisodeRecord) -> int:
    return _usage_sum(ep, "output")


@scorer()
def tokens_input(ep: EpisodeRecord) -> int:
    return _usage_sum(ep, "input")


@scorer(aggregate="mean")
def wall_seconds(ep: EpisodeRecord) -> float:
    return round(ep.facts.wall_seconds, 3)


@scorer()
def stop_reason(ep: EpisodeRecord) -> str | None:
    last = _last(ep)
    return last.get("stopReason") if last else None


# the metrics that are fields of EpisodeMetrics (registered above); the verdicts are not metrics
_VERDICTS = ("failure", "integrity_flag", "integrity_detail", "scores")
BUILTIN_METRICS = tuple(name for name in EpisodeMetrics.model_fields if name not in _VERDICTS)


def score_episode(
    facts: EpisodeFacts, task: Task, run_dir: Path, card: Any = None, harness: str | None = None
) -> EpisodeMetrics:
    """Metrics of one finished episode (``facts.status`` must be ``"success"``) run in ``harness`` (a spec; default:
    the default harness): every registered scorer's value, the failure and the integrity flag. A built-in metric
    cannot be unscored (the episode then is: ValueError)."""
    ep = record_episode(facts, task, run_dir, card, harness)
    values: dict[str, Any] = {}
    scores: dict[str, Score] = {}
    for name in SCORERS:
        if name in BUILTIN_METRICS:
            value = ep.value(name)
            if isinstance(value, Unscored):
                raise ValueError(f"built-in metric {name} unscored: {value.reason}")
            values[name] = value
        else:
            scores[name] = _extra_score(ep, name)
    failure = None
    if not values["complete_loop"]:
        failure = next((name for name, holds in FAILURE_RULES if holds(facts, values)), "checker_failed")
    flag = "session_file_differs_from_events" if ep.mismatch else integrity_flag(facts)
    return EpisodeMetrics(**values, failure=failure, integrity_flag=flag, integrity_detail=ep.mismatch, scores=scores)


def _extra_score(ep: EpisodeRecord, name: str) -> Score:
    """A registered metric beyond the built-in ones: a scorer that breaks leaves this metric unscored (with the
    reason), not the episode."""
    try:
        value = ep.value(name)
    except Exception as exc:  # noqa: BLE001 - one added metric's bug must not unscore the built-in ones
        return Score(unscored=f"scorer failed: {type(exc).__name__}: {exc}")
    return Score(unscored=value.reason) if isinstance(value, Unscored) else Score(value=value)


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


def _last(ep: EpisodeRecord) -> dict[str, Any] | None:
    assistants = ep.assistants
    return assistants[-1] if assistants else None


def _usage_sum(ep: EpisodeRecord, key: str) -> int:
    return sum(int((m.get("usage") or {}).get(key) or 0) for m in ep.assistants)


def _normalise(cmd: str) -> str:
    return " ".join(cmd.split())
