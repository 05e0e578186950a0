"""A probe set: model turns asked under the harness's real system prompt and tools, and how each reply is read.

A probe set is a folder with ``probes.yaml`` (``name``, ``cwd`` and ``date`` for the system prompt, ``probes``: each
``id``, ``needs_tool``, optional ``expect_tool``, optional ``history`` — earlier messages in Pi's wire format — and
the ``user`` message, or none when the history already ends with the turn to answer). The request is what Pi sends
(``HarnessCard.render_system_prompt`` and the card's active tools; user text as content parts), without streaming.

``read_reply`` turns one reply into the probe's figures (all booleans or lists, so they sum into shares):

- ``tool_call``: the reply carries a tool call, i.e. the model wrote one in its template's format and the server
  parsed it (for harnessfit's server, a ``<tool_call>{json}</tool_call>`` block);
- ``malformed_tool_call``: the text still holds a ``<tool_call>`` tag — a block the server could not parse;
- ``untagged_tool_call``: no call and no tag, but the text holds a JSON object naming a card tool (a call written
  outside the template's format);
- per call, the card's validator (``HarnessCard.validate_call``): ``double_encoded`` and error reason codes;
- ``think``: ``<think>`` in the text, or reasoning returned beside it;
- ``stopped``: the reply ended at end-of-turn (``stop`` / ``tool_calls``), ``hit_token_cap``: it ran to the cap;
- ``answered_without_tool``: a probe that needs a tool, answered with text alone (no call, no attempt);
- ``unneeded_tool_call``: a probe that needs none, answered with a call; ``right_tool``: the first call is the
  expected tool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harnessfit.core.jsonio import sha256_bytes
from harnessfit.errors import UserError
from harnessfit.eval.client import ChatReply
from harnessfit.harness.base import get_harness
from harnessfit.harness.card import HarnessCard

__all__ = ["Probe", "ProbeSet", "load_probes", "request_messages", "read_reply", "FLAGS"]

FLAGS = (
    "tool_call",
    "malformed_tool_call",
    "untagged_tool_call",
    "think",
    "stopped",
    "hit_token_cap",
    "answered_without_tool",
    "unneeded_tool_call",
    "right_tool",
)

_DECODER = json.JSONDecoder()


class Probe(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    needs_tool: bool
    expect_tool: str | None = None
    history: list[dict[str, Any]] = Field(default_factory=list)
    user: str | None = None

    @model_validator(mode="after")
    def _turn(self) -> Probe:
        if self.user is None and (not self.history or self.history[-1].get("role") not in ("user", "tool")):
            raise ValueError(f"probe {self.id}: without `user`, the history must end with a user or tool message")
        return self


class ProbeSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    cwd: str = "/workspace/project"
    date: str = "2026-01-15"
    probes: list[Probe] = Field(min_length=1)
    path: str = ""
    sha256: str = ""

    @model_validator(mode="after")
    def _unique(self) -> ProbeSet:
        ids = [p.id for p in self.probes]
        if len(set(ids)) != len(ids):
            raise ValueError("probe ids must be unique")
        return self


def load_probes(folder: Path) -> ProbeSet:
    """Read ``folder/probes.yaml`` (or the YAML file itself); one clear line for a bad file."""
    folder = Path(folder)
    path = folder / "probes.yaml" if folder.is_dir() else folder
    if not path.is_file():
        raise UserError(f"probe set not found: {path} (a probe set is a folder with probes.yaml)")
    data = path.read_bytes()
    try:
        raw = yaml.safe_load(data)
        if not isinstance(raw, dict):
            raise UserError(f"{path}: a probe set is a mapping with probes")
        raw.setdefault("name", path.parent.name)
        probes = ProbeSet.model_validate(raw)
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "probes"
        raise UserError(f"{path}: {where}: {first.get('msg', 'invalid').removeprefix('Value error, ')}") from None
    probes.path, probes.sha256 = str(path.parent), sha256_bytes(data)
    return probes


def request_messages(card: HarnessCard, probes: ProbeSet, probe: Probe) -> list[dict[str, Any]]:
    """The messages the harness would send for this turn (Pi's: ``Harness.render_request``): its system prompt, the
    history, the user text as content parts."""
    system = get_harness(card.harness).render_request(card, probes.cwd, probes.date)["system"]
    messages = [{"role": "system", "content": system}, *probe.history]
    if probe.user is not None:
        messages.append({"role": "user", "content": [{"type": "text", "text": probe.user}]})
    return messages


def _untagged_call(text: str, tools: set[str]) -> bool:
    i = text.find("{")
    while i >= 0:
        try:
            value, _ = _DECODER.raw_decode(text, i)
        except ValueError:
            value = None
        if isinstance(value, dict) and value.get("name") in tools and ("arguments" in value or "parameters" in value):
            return True
        i = text.find("{", i + 1)
    return False


def read_reply(card: HarnessCard, probe: Probe, reply: ChatReply) -> dict[str, Any]:
    """The figures of one reply (see the module docstring): ``flags`` and the ``calls`` with their violations."""
    tools = set(card.default_tools)
    text = reply.content or ""
    calls = []
    for call in reply.tool_calls:
        fn = call.get("function") or {}
        name, arguments = str(fn.get("name", "")), fn.get("arguments", "")
        violations = card.validate_call(name, arguments)
        calls.append(
            {
                "name": name,
                "arguments": arguments,
                "violations": [{"code": v.code.value, "severity": v.severity} for v in violations],
            }
        )
    made = bool(calls)
    malformed = "<tool_call>" in text
    untagged = not made and not malformed and _untagged_call(text, tools)
    attempted = made or malformed or untagged
    flags = {
        "tool_call": made,
        "malformed_tool_call": malformed,
        "untagged_tool_call": untagged,
        "think": "<think>" in text or bool(reply.reasoning),
        "stopped": reply.finish_reason in ("stop", "tool_calls"),
        "hit_token_cap": reply.finish_reason == "length",
        "answered_without_tool": probe.needs_tool and not attempted,
        "unneeded_tool_call": not probe.needs_tool and made,
        "right_tool": bool(probe.expect_tool) and made and calls[0]["name"] == probe.expect_tool,
    }
    return {"flags": flags, "calls": calls}
