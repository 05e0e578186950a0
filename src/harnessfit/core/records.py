"""Training records derived from Conversations: one SFTRecord per assistant action, DecisionPoints for RL."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

__all__ = ["SFTRecord", "DecisionPoint", "record_fidelity"]


def record_fidelity(record: dict[str, Any]) -> str:
    """A record's fidelity tier (JSON form): ``"byte"`` when it carries none (a build at tier ``byte``, or from before
    tiers)."""
    return record.get("fidelity") or "byte"


class _Tiered(BaseModel):
    """A record's last fields, ``fidelity`` (``"byte"``/``"content"``) and the ``alterations`` its context holds, are
    written only by a build at tier ``content`` (``None``: left out of the JSON form, as a ``byte`` build writes
    records)."""

    @model_serializer(mode="wrap")
    def _without_absent_tier(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if data.get("fidelity", 0) is None:
            data.pop("fidelity")
            data.pop("alterations", None)
        return data


class SFTRecord(_Tiered):
    """``messages`` is the context before the action (system prompt first), ``action`` the assistant message to
    learn, in wire form (``arguments`` as compact JSON text, exactly as Pi sends it back)."""

    id: str
    conversation_id: str
    split: str
    action_index: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    action: dict[str, Any]
    source: str
    group: str
    fidelity: str | None = None
    alterations: list[str] | None = None


class DecisionPoint(_Tiered):
    """A conversation state and the next assistant turn, for RL. ``next_turn.tool_calls`` carry arguments as
    parsed JSON objects (structured), and ``tool_results`` the results Pi returned for them in the trace."""

    id: str
    conversation_id: str
    split: str
    turn_index: int
    state: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    next_turn: dict[str, Any]
    tool_results: list[dict[str, Any]]
    source: str
    group: str
    fidelity: str | None = None
    alterations: list[str] | None = None
