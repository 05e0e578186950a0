"""The mapping contract: one source tool call (+ its result) → Pi tool call(s) with Pi-format result text.

A mapping never guesses. For each source call it returns exactly one outcome:

- ``PiCall`` (or a list of them, when one source call is exactly several Pi calls, e.g. a patch over two files):
  the Pi tool ``name``, the ``arguments`` *object* (a dict, key order as Pi's schema lists them), the Pi-format
  ``result`` text (what Pi's tool would have returned; ``None`` only when the source has no result step for the
  call, which the converter turns into ``missing_tool_result``), and the ``transformations`` done (short stable
  strings such as ``"claude.Read->read"``, ``"read_result.strip_line_numbers"``; the converter appends them,
  de-duplicated and in first-seen order, to the conversation's provenance).
- ``Drop``: the call and its result are removed under a documented policy (tools that change nothing in the
  workspace: TodoWrite, update_plan, ExitPlanMode…). ``policy`` becomes a transformation string
  (``"drop:<policy>"``).
- ``Failure``: a closed ``Reason`` (``unsupported_tool``, ``unmappable_arguments``, ``arguments_double_encoded``,
  ``image_content``…), a one-line ``detail`` and a ``repair_hint`` saying what a repair would have to fix. The whole
  trajectory is rejected with it.

The converter (not the mapping) then validates every mapped call against the card (``card.validate_call``) and
rejects ``schema_violation`` on any error; it also checks result images, orphans and missing results.

Helpers here are shared by every mapping: :func:`parse_arguments` (object / JSON text / double-encoded),
:func:`arg_failure`, :func:`unsupported`. Pi's result wording lives in ``harnessfit.harness.pi_results``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import orjson

from harnessfit.core.rejection import Failure, Reason
from harnessfit.core.trajectory import Step, ToolCall, Trajectory

__all__ = [
    "PiCall",
    "Drop",
    "Failure",
    "MapOutcome",
    "MapContext",
    "Mapping",
    "parse_arguments",
    "arg_failure",
    "unsupported",
    "result_text",
]


@dataclass(frozen=True, slots=True)
class PiCall:
    """One Pi tool call and the Pi-format text its result would have had."""

    name: str
    arguments: dict[str, Any]
    result: str | None
    transformations: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Drop:
    """Remove this call and its result (a no-op tool under a documented policy)."""

    policy: str


MapOutcome = PiCall | Sequence[PiCall] | Drop | Failure


@dataclass(slots=True)
class MapContext:
    """What a mapping may look at besides the call: the harness card (``card.format_result``, ``card.tools``),
    the trajectory (for ``cwd`` and source details), and the cwd the system prompt will show (after defaults)."""

    card: Any
    trajectory: Trajectory
    cwd: str
    notes: list[str] = field(default_factory=list)


@runtime_checkable
class Mapping(Protocol):
    """Maps one source format's tool calls to Pi. Register it in ``convert.mappings.registry.MAPPINGS``."""

    format: str

    def map_call(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome: ...


def parse_arguments(raw: Any, tool: str) -> dict[str, Any] | Failure:
    """Source arguments → a dict, or a Failure.

    - a dict is returned as is;
    - a string holding a JSON object is parsed (the ordinary OpenAI wire form);
    - a string holding a JSON *string* (a string of a string) is ``arguments_double_encoded`` — Pi rejects such
      calls rather than unwrapping them, so training on them would teach a call Pi refuses;
    - anything else (broken JSON, a list, a number) is ``unmappable_arguments``. ``None`` / ``""`` mean ``{}``.
    """
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return Failure(
                Reason.unmappable_arguments, f"{tool}: arguments are not valid JSON ({raw[:80]!r})",
                "re-emit the call with a complete JSON object",
            )
        if isinstance(value, str):
            return Failure(
                Reason.arguments_double_encoded, f"{tool}: arguments are a JSON string holding JSON ({raw[:80]!r})",
                "decode the inner string once so arguments is a JSON object",
            )
        if isinstance(value, dict):
            return value
        return Failure(
            Reason.unmappable_arguments, f"{tool}: arguments are JSON {type(value).__name__}, not an object",
            "arguments must be a JSON object",
        )
    return Failure(
        Reason.unmappable_arguments, f"{tool}: arguments of type {type(raw).__name__}",
        "arguments must be a JSON object",
    )


def arg_failure(tool: str, detail: str, hint: str) -> Failure:
    """``unmappable_arguments`` for ``tool`` with a detail and a repair hint."""
    return Failure(Reason.unmappable_arguments, f"{tool}: {detail}", hint)


def unsupported(tool: str, why: str = "Pi has no such tool") -> Failure:
    """``unsupported_tool``: the source used a tool Pi's card does not offer."""
    return Failure(
        Reason.unsupported_tool, f"tool {tool!r}: {why}",
        "re-run the task with only read/bash/edit/write, or express the call as a bash command by hand",
    )


def result_text(result: Step | None) -> str | None:
    """The source result text (``None`` when there is no result step)."""
    if result is None:
        return None
    return result.text or ""
