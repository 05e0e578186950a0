"""Conversation: exactly what the harness would send — OpenAI chat ``messages`` + ``tools``, in Pi's serialisation.

``messages`` and ``tools`` are plain dicts so that key order (part of the wire format) is kept byte-exactly.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

__all__ = ["AlteredResult", "ConversationMeta", "Conversation", "PrefixInfo", "context_fidelity"]


class AlteredResult(BaseModel):
    """The tool message at index ``message`` holds Pi's text rendered from output its source agent altered in a
    documented way (``alterations``, e.g. ``claude_code.bash_edges_trimmed``): fidelity tier ``content``."""

    message: int
    alterations: list[str]


def context_fidelity(altered: list[dict[str, Any]] | None, end: int) -> tuple[str, list[str]]:
    """The fidelity tier of the context ``messages[:end]`` of a conversation whose ``meta.altered`` (JSON form) is
    ``altered``, and the alterations it holds (sorted): ``("byte", [])`` when none of its messages is altered."""
    names = sorted({a for r in altered or () if r["message"] < end for a in r["alterations"]})
    return ("content" if names else "byte"), names


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
    labels_from: int = 0
    """Index of the first message that may be a training label; the assistant messages before it are history only
    (after a Pi compaction: the kept messages, which the model wrote before the compaction, seeing another
    context)."""
    prefix: PrefixInfo | None = None
    altered: list[AlteredResult] | None = None
    """The tool messages rendered from altered output (fidelity tier ``content``); absent (``None``, and then left
    out of the JSON form, so a byte-tier record is written as before tiers existed) when every byte is known."""

    context_only: list[int] | None = None
    """Indices of assistant messages that are context only, never labels: a call Pi refused before running it, kept
    as Pi replays it with its refusal (``formats.base.PiCall.refused``), so the turns after it learn the recovery.
    Absent (``None``, left out of the JSON form like ``altered``) when there is none."""

    @model_serializer(mode="wrap")
    def _without_absent_altered(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        for key in ("altered", "context_only"):
            if data.get(key, 0) is None:
                del data[key]
        return data


class Conversation(BaseModel):
    """One accepted trajectory in the harness's wire form; ``id`` is derived from the card and the trajectory id.
    With ``meta.prefix`` set it is instead the exact prefix of a rejected trajectory (see ``PrefixInfo``)."""

    id: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    meta: ConversationMeta
