"""Rejection: every input that does not become a Conversation becomes one of these, with a closed reason code.

Three nouns and one builder, shared by every stage (readers, mappings, gates, the dataset build):

- ``Reason``: the closed set of reason codes;
- ``Failure``: a reason, a detail and a repair hint *before* it is tied to a record (what a mapping or Pi's
  result renderer returns for one call; a gate turns it into a Rejection of the trajectory);
- ``Rejection``: one ledger row (record id, source, file, lines, reason, detail, repair hint);
- ``reject(subject, reason, detail, hint)``: the one way to make a Rejection, for a trajectory, a conversation
  (or its meta) or a file, so ids and provenance are filled the same way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel

from harnessfit.core.conversation import Conversation, ConversationMeta
from harnessfit.core.ids import content_id
from harnessfit.core.trajectory import Trajectory

__all__ = ["Reason", "Failure", "Rejection", "reject", "excerpt"]

_SEPARATORS = frozenset(" \t\r\n\"'`,;(){}[]<>|")


def excerpt(text: str, limit: int) -> str:
    """At most ``limit`` characters of ``text`` for a ledger detail, cut only after a separator (space, quote,
    bracket, comma…) and marked ``…`` when shortened. Why: a cut inside a token leaves a piece of it that no detector
    recognises (18 characters of an API key are no longer an API key), so redaction could not remove it; whole
    words either stay whole, and are redacted like any text, or are left out."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    at = max((i for i, ch in enumerate(cut) if ch in _SEPARATORS), default=-1)
    return cut[: at + 1] + "…"


class Reason(StrEnum):
    """Closed set of reasons, grouped by the stage that gives them; ledger summaries list them in this order. Which
    one a trajectory gets is decided by the gates, in the order of ``convert.gates.GATES``. Adding one is a
    deliberate change: every consumer of the ledger sees it.

    A call's problem is either in the call (``unsupported_tool``, ``ui_only_call`` — a UI-only call that could not be
    dropped without changing what the model saw —, ``unmappable_arguments``, ``arguments_double_encoded``,
    ``schema_violation``, ``user_rejected_call``, ``marked_context_only`` — a deliberate mistake the recording
    marks, kept in the context —: the call is no training label) or in its result
    (``unmappable_result``, ``unknown_pi_text``, ``missing_tool_result``, a result's ``image_content``: the call is an
    exact label, the context after it is not)."""

    # reading
    unknown_format = "unknown_format"
    parse_error = "parse_error"
    not_utf8 = "not_utf8"
    binary_file = "binary_file"
    truncated_file = "truncated_file"
    record_too_large = "record_too_large"  # a JSONL line or a whole JSON document over the one size limit
    empty = "empty"
    side_branch = "side_branch"
    parent_cycle = "parent_cycle"  # a session whose parentId chain loops: Pi cannot build its path, so cannot load it
    subagent = "subagent"
    # conversion
    unsupported_tool = "unsupported_tool"
    ui_only_call = "ui_only_call"
    unmappable_arguments = "unmappable_arguments"
    unmappable_result = "unmappable_result"
    arguments_double_encoded = "arguments_double_encoded"
    marked_context_only = "marked_context_only"  # a turn its session marks as context only (a planted mistake)
    schema_violation = "schema_violation"
    harness_version_mismatch = "harness_version_mismatch"
    unknown_pi_text = "unknown_pi_text"  # a Pi session's result in a wording no known Pi release writes
    orphan_tool_result = "orphan_tool_result"
    turn_after_answer = "turn_after_answer"
    missing_tool_result = "missing_tool_result"
    aborted_or_error_turn = "aborted_or_error_turn"
    user_rejected_call = "user_rejected_call"
    image_content = "image_content"
    no_final_response = "no_final_response"
    # dataset build
    duplicate_exact = "duplicate_exact"
    duplicate_near = "duplicate_near"


class Rejection(BaseModel):
    """One ledger row. ``record_id`` is the trajectory id (or a file-level id when nothing could be read).

    ``kept_id`` names the surviving twin for duplicate reasons. For a rejected trajectory, ``calls`` counts its source
    tool calls and ``labels`` those kept as training labels from its exact prefix (``None`` for rows that are not a
    trajectory's: unreadable lines and files, duplicates).
    """

    record_id: str
    source: str
    file: str
    line_start: int | None = None
    line_end: int | None = None
    reason: Reason
    detail: str
    repair_hint: str
    kept_id: str | None = None
    calls: int | None = None
    labels: int | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """Why one thing (a tool call, its result) cannot be expressed exactly in the harness: a closed ``reason``, a
    one-line ``detail`` and a ``repair_hint``. It names no record; the gate that sees it rejects the trajectory."""

    reason: Reason
    detail: str
    repair_hint: str


def reject(
    subject: Trajectory | Conversation | ConversationMeta | Path | str,
    reason: Reason,
    detail: str,
    hint: str,
    *,
    record_id: str | None = None,
    source: str | None = None,
    sha256: str = "",
    line_start: int | None = None,
    line_end: int | None = None,
    kept_id: str | None = None,
    calls: int | None = None,
    labels: int | None = None,
) -> Rejection:
    """The Rejection of ``subject``, with its id and provenance filled in.

    - a ``Trajectory``: its id, source, file and line span (from its provenance), and ``calls`` / ``labels`` (its
      source tool calls, and those kept as labels from its exact prefix);
    - a ``Conversation``: its id and its meta's source, file and lines; a ``ConversationMeta``: the same, with
      ``record_id`` given by the caller (``kept_id`` names the surviving twin of a duplicate);
    - a path (a file or folder that gave no record): ``source`` is the format name, and the id is derived from the
      file's SHA-256 (or the path when unreadable), the reason and the line span, so it is stable across machines.
    """
    if isinstance(subject, Trajectory):
        p = subject.provenance
        return Rejection(
            record_id=record_id or subject.id,
            source=subject.source,
            file=p.file,
            line_start=p.line_start,
            line_end=p.line_end,
            reason=reason,
            detail=detail,
            repair_hint=hint,
            kept_id=kept_id,
            calls=calls,
            labels=labels,
        )
    if isinstance(subject, Conversation | ConversationMeta):
        meta = subject.meta if isinstance(subject, Conversation) else subject
        rid = record_id or (subject.id if isinstance(subject, Conversation) else None)
        if rid is None:
            raise ValueError("reject(ConversationMeta, ...) needs record_id")
        return Rejection(
            record_id=rid,
            source=meta.source,
            file=meta.file,
            line_start=meta.line_start,
            line_end=meta.line_end,
            reason=reason,
            detail=detail,
            repair_hint=hint,
            kept_id=kept_id,
        )
    if source is None:
        raise ValueError("reject(path, ...) needs source (the format name)")
    rid = record_id or content_id(
        "reject", source, sha256 or str(subject), reason.value, str(line_start), str(line_end)
    )
    return Rejection(
        record_id=rid,
        source=source,
        file=str(subject),
        line_start=line_start,
        line_end=line_end,
        reason=reason,
        detail=detail,
        repair_hint=hint,
        kept_id=kept_id,
    )
