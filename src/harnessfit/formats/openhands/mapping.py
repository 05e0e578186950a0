"""OpenHands tool calls (V0 and V1) → Pi calls.

==========================================  =====================================================================
OpenHands                                   Pi
==========================================  =====================================================================
``execute_bash`` / ``terminal`` /           ``bash{command}`` (``timeout`` kept in seconds; ``security_risk``,
``action:run`` (CmdRunAction)               ``summary``, ``thought`` are OpenHands metadata: dropped, recorded);
                                            ``is_input`` (typing into a running process) is rejected
``str_replace_editor`` / ``file_editor``    ``create`` → ``write``, ``str_replace`` → ``edit``; ``view``, ``insert``,
                                            ``undo_edit`` rejected (see ``mappings.swe_agent``)
``think``, ``task_tracker``                 dropped with their results (they change nothing in the workspace)
others (browser, ipython, MCP…)             ``unsupported_tool``
==========================================  =====================================================================

Bash results: OpenHands strips the command's trailing newline and wraps the output in its own status lines
(``[The command completed with exit code N.]``…). The status lines are parsed and removed; the exit code comes from
the observation. An *empty* output renders exactly as Pi's ``(no output)`` (plus the exit status). A non-empty
output cannot: whether it ended with a newline is lost, so such results are rejected rather than guessed.
"""

from __future__ import annotations

import re
from typing import Any

from harnessfit.core.rejection import Reason, excerpt
from harnessfit.core.trajectory import Step, ToolCall
from harnessfit.formats.base import (
    Drop,
    Failure,
    MapContext,
    MapOutcome,
    PiCall,
    arg_failure,
    parse_arguments,
    unsupported,
)
from harnessfit.formats.swe_agent.mapping import map_str_replace_editor
from harnessfit.harness.pi_results import pi_bash_result

__all__ = ["OpenHandsMapping", "split_openhands_output"]

BASH_TOOLS = frozenset({"execute_bash", "terminal", "bash", "action:run"})
EDITOR_TOOLS = frozenset({"str_replace_editor", "file_editor"})
DROP_TOOLS = {
    "think": "openhands.think:no-workspace-change",
    "task_tracker": "openhands.task_tracker:no-workspace-change",
}
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
        if name in DROP_TOOLS:
            return Drop(DROP_TOOLS[name])
        if name not in BASH_TOOLS and name not in EDITOR_TOOLS:
            return unsupported(name or "<unnamed>", "OpenHands tool with no Pi equivalent")
        args = parse_arguments(call.arguments, name)
        if isinstance(args, Failure):
            return args
        if name in EDITOR_TOOLS:
            if result is not None and result.meta.get("observation") == "error":
                return Failure(
                    Reason.unmappable_arguments, f"{name} result is an OpenHands error ({excerpt(result.text or '', 80)!r})",
                    "drop the failed step or re-run the task under Pi so the error text is Pi's own",
                )
            return map_str_replace_editor(args, result, "openhands", _editor_success, ctx.card)
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
        if code is None:
            return Failure(
                Reason.unmappable_arguments, f"{name} result has no exit status",
                "the exit status decides Pi's text: keep the observation metadata",
            )
        if code == -1:
            return Failure(
                Reason.unmappable_arguments, f"{name} result: command still running or timed out (exit code -1)",
                "Pi waits for the command or reports its own timeout text: re-run under Pi",
            )
        if output.strip():
            return Failure(
                Reason.unmappable_arguments,
                f"{name} result: OpenHands strips the output's final newline, so Pi's exact text is unknown",
                "re-run the command under Pi (or a runner that keeps raw output)",
            )
        rendered = pi_bash_result(ctx.card, "", code, tool=name)
        if isinstance(rendered, Failure):
            return rendered
        return PiCall("bash", arguments, rendered, notes)
