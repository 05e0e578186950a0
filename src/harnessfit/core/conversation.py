"""Conversation: exactly what the harness would send — OpenAI chat ``messages`` + ``tools``, in Pi's serialisation.

``messages`` and ``tools`` are plain dicts so that key order (part of the wire format) is kept byte-exactly.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["ConversationMeta", "Conversation", "PrefixInfo"]


class PrefixInfo(BaseModel):
    """Why a conversation is only a prefix: the trajectory (``of``, its ledger row's record id) was rejected for
    ``reason``, and the first problem (``detail``) is at trajectory step ``step``; every assistant message before it is
    exact, and those ``labels`` messages are training labels (SFT records, decision points). A prefix is never
    exported as a conversation: it need not end with an answer, and its last calls may have no result."""

    of: str
    reason: str
    step: int | None
    detail: str
    labels: int


class ConversationMeta(BaseModel):
    """Where a conversation came from (file, SHA-256, lines, root request for grouped splits), which card it was
    made for, the cwd/date its system prompt shows, and every transformation applied on the way."""

    source: str
    file: str
    sha256: str
    line_start: int | None = None
    line_end: int | None = None
    root_request_id: str
    repository: str | None = None
    card: str  # e.g. "pi-0.73.1"
    cwd: str
    date: str
    transformations: list[str] = Field(default_factory=list)
    prefix: PrefixInfo | None = None


class Conversation(BaseModel):
    """One accepted trajectory in the harness's wire form; ``id`` is derived from the card and the trajectory id.
    With ``meta.prefix`` set it is instead the exact prefix of a rejected trajectory (see ``PrefixInfo``)."""

    id: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    meta: ConversationMeta
