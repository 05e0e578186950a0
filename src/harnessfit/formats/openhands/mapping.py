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

Bash results: OpenHands wraps the output in its own status lines
(``[The command completed with exit code N.]``…; V1 keeps them apart, in ``metadata.suffix``). The status lines are
parsed and removed; the exit code comes from the observation. OpenHands strips the output's surrounding whitespace
(``openhands/runtime/utils/bash.py``, ``BashSession._get_command_output``: the command echo is removed after an
``lstrip`` and the output returned ``rstrip``-ped; the V1 SDK's ``terminal_session.py`` does the same), and Pi shows a
command's output as it is, so no bash result is ever byte-exact. At fidelity tier ``byte`` every one is
``unmappable_result`` rather than guessed (the call is a label; the context after it is not). At tier ``content``
(``formats.base.Altered``) Pi's bash text is rendered from the recorded output and exit code, the alteration named
``openhands.output_stripped`` (an empty output is Pi's ``(no output)``). What stays ``unmappable_result`` at both
tiers, with the reason the data shows: an OpenHands error observation (its own message, not the command's output),
no exit code, exit code -1 (still running, timed out or not seen to finish), terminal control sequences in the
output (OpenHands runs commands in an interactive terminal, whose bracketed-paste switches ``ESC[?2004l``/
``ESC[?2004h`` V1 outputs keep; Pi runs commands without one), output over Pi's own limits. At tier ``byte`` also a
non-empty output whose final newline is lost, and an empty output, which is no output *or* only blank lines (Pi
writes ``(no output)`` for the first and the blank lines for the second).

Any result: an observation with no text under any of the layout's keys, or with text OpenHands appended after the
tool's own result (V1 ``extended_content``), is ``unmappable_result`` (see ``formats/openhands/events.py``).
"""

from __future__ import annotations

import re
from typing import Any

from harnessfit.core.rejection import excerpt
from harnessfit.core.trajectory import Step, ToolCall
from harnessfit.formats.base import (
    Altered,
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

__all__ = ["OUTPUT_STRIPPED", "OpenHandsMapping", "split_openhands_output"]

OUTPUT_STRIPPED = "openhands.output_stripped"
"""What OpenHands does to every command output it records (the module docstring cites where)."""

BASH_TOOLS = frozenset({"execute_bash", "terminal", "bash", "action:run"})
EDITOR_TOOLS = frozenset({"str_replace_editor", "file_editor"})
METADATA_ARGS = frozenset({"security_risk", "summary", "thought", "blocking", "is_input", "reset"})
_STATUS = re.compile(
    r"\n?\[(?:The command completed with exit code (?P<a>-?\d+)\.|Command finished with exit code (?P<b>-?\d+)"
    r"|Current working directory: [^\]\n]*|Python interpreter: [^\]\n]*)\]"
)
_CONTROL = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|.?)")  # a CSI sequence (``\x1b[?2004l``) or another escape
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
                out = with_result(
                    out,
                    result_failure(
                        name,
                        f"an OpenHands error ({excerpt(result.text or '', 80)!r})",
                        "keep the session up to this call, or re-run the task under Pi so the error text is Pi's own",
                    ),
                )
        else:
            out = self._bash(name, args, result, ctx)
        lost = _lost_result(name, result)
        return out if lost is None else with_result(out, lost)

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
        return PiCall("bash", arguments, _bash_result(name, result, ctx), notes)


def _bash_result(name: str, result: Step, ctx: MapContext) -> Failure | Altered:
    """Pi's text for an OpenHands command result, rendered from the stripped output (an ``Altered``: its ``failure``
    says why the byte tier cannot render it), or why even the content is unknown, from what the data shows (see the
    module docstring: OpenHands never keeps the raw output)."""
    output, code = split_openhands_output(result.text or "")
    if result.exit_code is not None:
        code = result.exit_code
    status = result.meta.get("status") if isinstance(result.meta.get("status"), str) else None
    if result.is_error:
        return result_failure(
            name,
            f"an OpenHands error observation ({excerpt(output or status or '', 80)!r}), not the command's output",
            "Pi would have run the command: re-run it under Pi",
        )
    if code is None:
        missing = result.meta.get("no_exit_code")
        return result_failure(
            name,
            f"no exit status in the observation ({missing or 'no exit code field'}; no "
            "status line in its text), and it decides Pi's text",
            "keep the observation metadata (exit_code) when recording",
        )
    if code == -1:
        said = f"; OpenHands said {excerpt(status, 80)!r}" if status else ""
        return result_failure(
            name,
            f"exit code -1: the command was still running, timed out or not seen to finish{said}",
            "Pi waits for the command or reports its own timeout text: re-run under Pi",
        )
    control = _CONTROL.search(output)
    if control:
        return result_failure(
            name,
            f"the output holds terminal control sequences ({control.group()!r}…) of "
            "OpenHands' interactive terminal; Pi runs commands without one, so its text is unknown",
            "re-run the command under Pi (or a runner that keeps raw, non-TTY output)",
        )
    if output:
        failure = result_failure(
            name,
            f"{len(output)} characters of output whose final newline OpenHands stripped, so Pi's exact text is unknown",
            "re-run the command under Pi (or a runner that keeps raw output)",
        )
    else:
        # empty here is no output *or* only blank lines, which Pi shows as they are ("(no output)" is Pi's text for
        # none at all), so even this is not byte-exact
        failure = result_failure(
            name,
            "an empty output after OpenHands stripped its surrounding whitespace: the "
            f"command printed nothing or only blank lines (exit code {code}), and Pi's text "
            "differs between them",
            "re-run the command under Pi (or a runner that keeps raw output)",
        )
    rendered = pi_bash_result(ctx.card, output, code, tool=name)
    return Altered(rendered, (OUTPUT_STRIPPED,), failure)


def _lost_result(name: str, result: Step | None) -> Failure | None:
    """The result OpenHands showed is not all in the step: no text under the layout's keys, or text appended after
    the tool's own result."""
    if result is None:
        return None
    if isinstance(result.meta.get("no_text"), str):
        return result_failure(
            name,
            f"{result.meta['no_text']}, so the text OpenHands showed is unknown",
            "record the observation's content (or output) when exporting",
        )
    extended = result.meta.get("extended_content")
    if isinstance(extended, str):
        return result_failure(
            name,
            f"OpenHands appended {len(extended)} characters of agent context after the tool's "
            f"result ({excerpt(extended, 60)!r}); Pi adds none",
            "convert a run without path-scoped rules, or re-run the task under Pi",
        )
    return None
