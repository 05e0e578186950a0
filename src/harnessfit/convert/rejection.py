"""Rejection: every input that does not become a Conversation becomes one of these, with a closed reason code."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel

__all__ = ["Reason", "Rejection"]


class Reason(StrEnum):
    """Closed set of reasons, in gate order. Adding one is a deliberate change (tests pin the list)."""

    # reading
    unknown_format = "unknown_format"
    parse_error = "parse_error"
    not_utf8 = "not_utf8"
    binary_file = "binary_file"
    truncated_file = "truncated_file"
    line_too_long = "line_too_long"
    empty = "empty"
    side_branch = "side_branch"
    subagent = "subagent"
    # conversion
    unsupported_tool = "unsupported_tool"
    unmappable_arguments = "unmappable_arguments"
    arguments_double_encoded = "arguments_double_encoded"
    schema_violation = "schema_violation"
    orphan_tool_result = "orphan_tool_result"
    missing_tool_result = "missing_tool_result"
    aborted_or_error_turn = "aborted_or_error_turn"
    image_content = "image_content"
    no_final_response = "no_final_response"
    # dataset build
    duplicate_exact = "duplicate_exact"
    duplicate_near = "duplicate_near"


class Rejection(BaseModel):
    """One ledger row. ``record_id`` is the trajectory id (or a file-level id when nothing could be read).

    ``kept_id`` names the surviving twin for duplicate reasons.
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
