"""Training records derived from Conversations: one SFTRecord per assistant action, DecisionPoints for RL."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["SFTRecord", "DecisionPoint"]


class SFTRecord(BaseModel):
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


class DecisionPoint(BaseModel):
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
