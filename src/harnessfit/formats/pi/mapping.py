"""Pi → Pi: the identity, except what Pi itself repairs when it replays an old session.

- ``edit{path, oldText, newText}`` (Pi ≤ 0.62) → ``edit{path, edits:[{oldText, newText}]}``. Pi 0.64+ accepts the
  legacy shape only by repairing it; a model trained on it would learn a call the current schema does not
  describe, so the call is upgraded to the current shape. Recorded as ``pi.edit_legacy->edits``.
- Result texts are Pi's own, in the words of the Pi that recorded the session: each is put in the target card's
  words (``harness.pi_texts.in_target_words``): kept byte for byte where the target writes the same wording, else
  re-rendered (0.x ``Successfully wrote N bytes to P`` → 1.6.0 ``Successfully wrote to P``); a text the target
  cannot write from what the session holds is a ``Failure`` for the result (``harness_version_mismatch`` naming the
  template), and an ``edit``/``write`` result in no known wording is ``unknown_pi_text``. Recorded as
  ``pi.text_rerendered:<key>``.
- A call Pi refused before running it, whose refusal the session holds in the target's exact words (argument text
  that is JSON but not an object, under a Pi that stores it as ``argumentsError``: ``refusal_in_context``), stays in
  the context as Pi replays it, ``{}``, with its refusal, so the turns after it are labels; it is never one
  (``PiCall.refused``). Recorded as ``pi.refused_call_in_context``.
"""

from __future__ import annotations

from typing import Any

import orjson

from harnessfit.core.rejection import Reason, excerpt
from harnessfit.core.trajectory import Step, ToolCall
from harnessfit.formats.base import Failure, MapContext, MapOutcome, PiCall, parse_arguments, result_text
from harnessfit.harness.card import HarnessCard
from harnessfit.harness.pi_texts import in_target_words, parse_text_fast

__all__ = ["PiMapping"]


def refusal_in_context(call: ToolCall, result: Step | None, card: HarnessCard) -> PiCall | None:
    """The refused call as context (``PiCall.refused``) when the session holds exactly what the target Pi would have
    sent after it; ``None`` otherwise (the caller cuts there).

    From pi-ai 1.x (``utils/json-parse.js`` ``parseToolCallArguments``) Pi parses the model's argument text, and text
    that parses to something other than an object is stored as ``arguments: {}`` with ``argumentsError`` (the reader
    gives that text back as the call's arguments, ``formats.pi.entries.call_arguments``). The agent loop then answers
    with ``Invalid arguments for tool "NAME": <reason>\n\nReceived arguments:\n<text>`` (``utils/validation.js``)
    without running the tool, and the provider replays the call as ``JSON.stringify(arguments)``, i.e. ``{}``
    (``api/openai-completions.js``). So when the target card has those two texts (``invalid_arguments``,
    ``arguments_not_object``) and the recorded result is that text to the byte, the context after the call is the
    target's: the call is kept with ``{}`` and its refusal. Argument text that does not parse at all is refused
    with node's own ``JSON.parse`` message, which is not re-derived here, so that case stays a cut."""
    template, reason = card.errors.get("invalid_arguments"), card.errors.get("arguments_not_object")
    text = result_text(result)
    if template is None or reason is None or text is None or not isinstance(call.arguments, str):
        return None
    try:
        value = orjson.loads(call.arguments)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, dict):
        return None
    if text != template.format(name=call.name, reason=reason, raw=call.arguments):
        return None
    return PiCall(call.name, {}, text, ("pi.refused_call_in_context",), refused=True)


class PiMapping:
    """Maps calls from Pi sessions (same tool names; legacy edit arguments upgraded)."""

    def map_call(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome:
        if isinstance(call.arguments, str) and call.arguments.strip():
            # A Pi session stores the arguments Pi *parsed* from the wire, so a string here is not wire text to
            # parse: the model sent a JSON string instead of an object (double encoding) and Pi refused it.
            kept = refusal_in_context(call, result, ctx.card)
            if kept is not None:
                return kept
            return Failure(
                Reason.arguments_double_encoded,
                f"{call.name}: the session stores the arguments as a string ({excerpt(call.arguments, 80)!r}): the model sent "
                "a JSON string, which Pi refuses ('must be object')",
                "keep such sessions for preference/RL data; for SFT, re-record the call with an object",
            )
        args = parse_arguments(call.arguments, call.name)
        if isinstance(args, Failure):
            return args
        transformations: tuple[str, ...] = ()
        text = result_text(result)
        rendered: str | Failure | None = text
        if text is not None:
            rendered = in_target_words(ctx.card, call.name, text, args)
            if (
                isinstance(rendered, Failure)
                and rendered.reason == Reason.unknown_pi_text
                and any(v.severity == "error" for v in ctx.card.validate_call(call.name, args))
            ):
                rendered = text  # the target refuses the call: it is cut at its own turn, its result is never seen
            if isinstance(rendered, str) and rendered != text:
                parsed = parse_text_fast(ctx.card, call.name, text)
                transformations = (f"pi.text_rerendered:{parsed.wording.key if parsed else '?'}",)
        if call.name == "edit" and "edits" not in args and {"oldText", "newText"} <= set(args):
            upgraded: dict[str, Any] = {"path": args.get("path")}
            upgraded["edits"] = [{"oldText": args["oldText"], "newText": args["newText"]}]
            for k, v in args.items():
                if k not in ("path", "oldText", "newText"):
                    upgraded[k] = v
            args = upgraded
            transformations += ("pi.edit_legacy->edits",)
        return PiCall(call.name, args, rendered, transformations)
