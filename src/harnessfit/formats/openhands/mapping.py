"""OpenHands tool calls (V0 and V1) → Pi calls.

==========================================  =====================================================================
OpenHands                                   Pi
==========================================  =====================================================================
``execute_bash`` / ``terminal`` /           ``bash{command}`` (``timeout`` kept in seconds; ``security_risk``,
``action:run`` (CmdRunAction)               ``summary``, ``thought`` are OpenHands metadata: dropped, recorded);
                                            ``is_input`` (typing into a running process) is rejected
``str_replace_editor`` / ``file_editor``    ``create`` → ``write``, ``str_replace`` → ``edit``, ``view`` of a file →
                                            ``read`` (result ``unmappable_result``); ``insert``, ``undo_edit``, a
                                            directory view: blockers (see ``formats.swe_agent.mapping``)
``think``, ``task_tracker``                 UI-only: dropped with their results where ``convert.policy`` allows it
others (browser, ipython, MCP…)             ``unsupported_tool``
==========================================  =====================================================================

Bash results: OpenHands strips the command's trailing newline and wraps the output in its own status lines
(``[The command completed with exit code N.]``…). The status lines are parsed and removed; the exit code comes from
the observation. An *empty* output renders exactly as Pi's ``(no output)`` (plus the exit status). A non-empty
output cannot: whether it ended with a newline is lost, so such results are ``unmappable_result`` rather than
guessed (the call is a label; the context after it is not).
"""

from __future__ import annotations

import re
from typing import Any

from harnessfit.core.trajectory import Step, ToolCall
from harnessfit.formats.base import (
    Failure,
    MapContext,
    MapOutcome,
    PiCall,
    arg_failure,
    parse_arguments,
    result_failure,
    unsupported,
    with_result,
)
from harnessfit.formats.swe_agent.mapping import map_str_replace_editor
from harnessfit.harness.pi_results import pi_bash_result

__all__ = ["OpenHandsMapping", "split_openhands_output"]

BASH_TOOLS = frozenset({"execute_bash", "terminal", "bash", "action:run"})
EDITOR_TOOLS = frozenset({"str_replace_editor", "file_editor"})
METADATA_ARGS = frozenset({"security_risk", "summary", "thought", "blocking", "is_input", "reset"})
_STATUS = re.compile(
    r"\n?\[(?:The command completed with exit code (?P<a>-?\d+)\.|Command finished with exit code (?P<b>-?\d+)"
    r"|Current working directory: [^\]\n]*|Python interpreter: [^\]\n]*)\]"
)
_ERRORS = re.compile(r"\A\s*(ERROR|Error|Ran into|Invalid|No replacement was performed|Parameter )")


def split_openhands_output(text: str) -> tuple[str, int | None]:
    """Remove OpenHands' ``[…]`` status lines; return (output, exit code found in them or ``None``)."""
    code = None
    for m in _STATUS.finditer(text):
        val = m.group("a") or m.group("b")
        if val is not None:
            code = int(val)
    return _STATUS.sub("", text), code


def _editor_success(command: str, text: str) -> bool:
    return not _ERRORS.match(text)


class OpenHandsMapping:
    """Maps OpenHands actions to Pi (see the module table)."""

    def map_call(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome:
        name = call.name
        if name not in BASH_TOOLS and name not in EDITOR_TOOLS:
            return unsupported(name or "<unnamed>", "OpenHands tool with no Pi equivalent")
        args = parse_arguments(call.arguments, name)
        if isinstance(args, Failure):
            return args
        if name in EDITOR_TOOLS:
            out = map_str_replace_editor(args, result, "openhands", _editor_success, ctx.card)
            if result is not None and result.meta.get("observation") == "error":
                return with_result(out, result_failure(
                    name, f"an OpenHands error ({(result.text or '')[:80]!r})",
                    "keep the session up to this call, or re-run the task under Pi so the error text is Pi's own"))
            return out
        return self._bash(name, args, result, ctx)

    @staticmethod
    def _bash(name: str, args: dict[str, Any], result: Step | None, ctx: MapContext) -> MapOutcome:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return arg_failure(name, "command is missing or empty", "give the command string")
        if args.get("is_input") in (True, "true", "True"):
            return arg_failure(name, "is_input sends keystrokes to a running process", "Pi's bash has no stdin")
        arguments: dict[str, Any] = {"command": command}
        timeout = args.get("timeout")
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
            arguments["timeout"] = timeout
        dropped = sorted(k for k in args if k not in ("command", "timeout"))
        notes = (f"openhands.{name}->bash", *(f"openhands.drop_arg:{k}" for k in dropped))
        if result is None:
            return PiCall("bash", arguments, None, notes)
        output, code = split_openhands_output(result.text or "")
        if result.exit_code is not None:
            code = result.exit_code
        rendered: str | Failure
        if code is None:
            rendered = result_failure(name, "no exit status in the observation, and it decides Pi's text",
                                      "keep the observation metadata (exit_code) when recording")
        elif code == -1:
            rendered = result_failure(name, "the command was still running or timed out (exit code -1)",
                                      "Pi waits for the command or reports its own timeout text: re-run under Pi")
        elif output.strip():
            rendered = result_failure(
                name, f"{len(output)} characters of output whose final newline OpenHands stripped, so Pi's exact "
                "text is unknown", "re-run the command under Pi (or a runner that keeps raw output)")
        else:
            rendered = pi_bash_result(ctx.card, "", code, tool=name)
        return PiCall("bash", arguments, rendered, notes)
