"""Synthetic OpenHands V1 (software-agent-sdk) events in each layout the SDK has written, for the reader and mapping
tests. Field names are the SDK's: up to 1.0.0a5 each observation class had its own text field (``output``, an
``error`` flag or message); from 1.0.0 every observation has ``content`` parts and ``is_error``; before 1.7.0 a
terminal observation's top-level ``exit_code`` stayed null (the code is in ``metadata.exit_code``)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["BENCHMARKS", "LAYOUTS", "action_event", "observation_event", "terminal_observation"]

BENCHMARKS = "openhands/OpenHands__benchmarks__output.jsonl"  # a real output in the older layout (traces-extra)
LAYOUTS = ("output", "content", "content+code")


def action_event(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "ActionEvent",
        "id": f"a-{call_id}",
        "source": "agent",
        "thought": [],
        "tool_name": name,
        "tool_call_id": call_id,
        "llm_response_id": f"r-{call_id}",
        "tool_call": {"id": call_id, "name": name, "arguments": json.dumps(arguments), "origin": "completion"},
        "action": {"kind": "TerminalAction", **arguments},
    }


def observation_event(call_id: str, name: str, observation: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "kind": "ObservationEvent",
        "id": f"o-{call_id}",
        "source": "environment",
        "tool_name": name,
        "tool_call_id": call_id,
        "action_id": f"a-{call_id}",
        "observation": observation,
        **extra,
    }


def _md(code: int) -> dict[str, Any]:
    """``CmdOutputMetadata`` as the terminal fills it: the status line the model saw is ``suffix``."""
    status = (
        f"\n[The command completed with exit code {code}.]"
        if code != -1
        else "\n[The command has no new output after 10 seconds. You may wait longer to see additional output.]"
    )
    return {"exit_code": code, "pid": -1, "working_dir": "/workspace", "prefix": "", "suffix": status}


def terminal_observation(layout: str, output: str, code: int, error: bool = False) -> dict[str, Any]:
    """One terminal result in a layout: ``output`` (≤ 1.0.0a5), ``content`` (1.0.0–1.6), ``content+code`` (1.7+)."""
    if layout == "output":
        return {
            "kind": "ExecuteBashObservation",
            "output": output,
            "command": "c",
            "exit_code": None,
            "error": error,
            "timeout": False,
            "metadata": _md(code),
        }
    parts = [{"cache_prompt": False, "type": "text", "text": output}]
    return {
        "kind": "TerminalObservation",
        "content": parts,
        "is_error": error,
        "command": "c",
        "timeout": False,
        "exit_code": code if layout == "content+code" else None,
        "metadata": _md(code),
    }
