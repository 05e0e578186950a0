"""OpenAI chat / ShareGPT tool calls → Pi calls.

Only calls already named as Pi's tools (``read``, ``bash``, ``edit``, ``write``) map, one to one: the arguments
are decoded (object or JSON text; a JSON string holding JSON is ``arguments_double_encoded``, because Pi rejects
such a call rather than unwrapping it), re-ordered in Pi's schema order, and left to the card's validator. Their
result text is the source's own, unchanged (such files are assumed to have been recorded against Pi-style tools;
nothing is re-rendered) — except that a result over Pi's output limits (2000 lines / 50 KB: Pi would have cut it and
added its own note) is ``unmappable_result``, as no Pi tool returns such a text. Any other tool name is ``unsupported_tool``, with the name in the detail: general chat
tool sets (ShareGPT/glaive function calling: ``search_recipes``, ``get_weather``…) and other agents' tools
(``str_replace_editor``, ``terminal``) have no exact Pi equivalent.
"""

from __future__ import annotations

from typing import Any

from harnessfit.core.trajectory import Step, ToolCall
from harnessfit.formats.base import (
    Failure,
    MapContext,
    MapOutcome,
    PiCall,
    parse_arguments,
    result_failure,
    result_text,
    unsupported,
)
from harnessfit.harness.pi_results import over_pi_limits

__all__ = ["OpenAIChatMapping", "PI_ARG_ORDER"]

PI_ARG_ORDER: dict[str, tuple[str, ...]] = {
    "read": ("path", "offset", "limit"),
    "bash": ("command", "timeout"),
    "edit": ("path", "edits"),
    "write": ("path", "content"),
}


def _schema_order(name: str, args: dict[str, Any]) -> dict[str, Any]:
    order = PI_ARG_ORDER[name]
    out = {k: args[k] for k in order if k in args}
    out.update((k, v) for k, v in args.items() if k not in out)  # extras stay: the validator reports them
    return out


class OpenAIChatMapping:
    """Pi-named calls map 1:1 (validated later by the card); everything else is ``unsupported_tool``."""

    def map_call(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome:
        name = call.name
        if name not in PI_ARG_ORDER:
            return unsupported(name or "<unnamed>", "not one of Pi's tools (read, bash, edit, write)")
        args = parse_arguments(call.arguments, name)
        if isinstance(args, Failure):
            return args
        ordered = _schema_order(name, args)
        notes = ("openai_chat.pi_named_call",)
        if list(ordered) != list(args):
            notes = (*notes, "openai_chat.arguments_reordered")
        text = result_text(result)
        why = over_pi_limits(text) if text is not None else None
        if why is not None:
            return PiCall(
                name,
                ordered,
                result_failure(
                    name,
                    f"{why}; Pi's {name} never returns such a text",
                    "keep the conversation up to this call, or re-run it under Pi",
                ),
                notes,
            )
        return PiCall(name, ordered, text, notes)
