"""Canonical, source-agnostic trajectory: what any reader produces and the converter consumes.

Readers keep the source's own tool names and argument shapes here (mapping to the harness happens in
``harnessfit.formats.<name>.mapping``), so a trajectory says what the agent really did, and provenance says where
it came from.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = ["ToolCall", "Step", "Provenance", "Trajectory", "CONTEXT_NOT_REBUILT"]

CONTEXT_NOT_REBUILT = "context_not_rebuilt"
"""The reason (a ``Trajectory.skipped_calls`` key) for calls a source made after its harness changed what the model
saw in a way harnessfit does not rebuild: a Claude Code microcompaction or a compaction that kept earlier messages and
a Codex compaction without its replacement history (what the model saw is not in the file), an OpenHands
condensation (its view — the events left after forgetting some, plus a summary — is not rebuilt). The reader leaves
such calls out of ``steps`` (no context for them is exact) and counts them here, so that every call of the file is
accounted for."""


class ToolCall(BaseModel):
    """One tool call as the source recorded it.

    ``arguments`` is what the source held: a dict when the source stored an object, or the raw text when it
    stored a string (which may be JSON, JSON-of-a-JSON-string, or broken JSON). The converter decides.
    """

    id: str
    name: str
    arguments: Any = None


class Step(BaseModel):
    """One message-level step.

    - ``user``: ``text`` (the prompt); ``images`` counts image parts the source had.
    - ``assistant``: ``text``, ``reasoning`` (thinking text, never trained unless a recipe asks), ``tool_calls``,
      ``stop_reason`` as the source said it (``stop``, ``toolUse``, ``error``, ``aborted``, ``length``…).
    - ``tool``: ``tool_call_id``, ``text`` (the result text as the source had it), ``is_error``, ``exit_code``
      when the source recorded one separately, ``images``.
    - ``system``: the source's own system prompt (replaced by the harness's on conversion).
    ``meta`` keeps source details a mapping needs (e.g. Claude's ``toolUseResult``); the wire builder reads only
    the block structure a reader kept there (``parts`` of a user message, ``content_string``, an assistant's ordered
    text/thinking ``blocks``) and ``history_only`` (a step that is context, never a label). One key is shared by
    every reader: ``meta["folded_calls"]`` names source tool calls the reader folded into this step (OpenHands'
    ``finish`` becomes the final answer text), so the yield accounting still counts them as calls.
    """

    role: Literal["system", "user", "assistant", "tool"]
    text: str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool | None = None
    exit_code: int | None = None
    images: int = 0
    stop_reason: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class Provenance(BaseModel):
    """Where a trajectory came from, byte-exactly, and what was done to it on the way."""

    format: str
    file: str
    sha256: str
    line_start: int | None = None
    line_end: int | None = None
    transformations: list[str] = Field(default_factory=list)


class Trajectory(BaseModel):
    """A source-agnostic agent run: ordered steps plus context for the harness prompt and for grouped splits.

    ``id`` is derived from content (see ``harnessfit.core.ids``), ``root_request_id`` groups runs that answer
    the same first request in the same repository, so splits never leak a task across train/validation.
    ``flags`` are facts the reader saw that gates turn into rejections (``subagent``, ``side_branch``…).
    ``lost_at``: where a hole starts — the index of the first step that may miss what an unreadable line held (the
    steps before it are whole); ``None`` when the reader does not know (then nothing of the trajectory is trusted
    when it is flagged ``lines_lost`` or ``truncated``). ``skipped_calls``: source tool calls the reader saw but left
    out of ``steps``, by reason (SWE-agent demonstrations; ``CONTEXT_NOT_REBUILT``), so that every call of the file is
    accounted for.
    """

    id: str
    source: str
    steps: list[Step]
    cwd: str | None = None
    date: str | None = None
    repository: str | None = None
    root_request_id: str
    source_harness_version: str | None = None
    flags: list[str] = Field(default_factory=list)
    lost_at: int | None = None
    skipped_calls: dict[str, int] = Field(default_factory=dict)
    provenance: Provenance
