"""Codex tool calls → Pi calls, with results re-rendered as Pi's bash / edit / write would have written them.

Mapping table, by the tool names Codex has used (anything not listed is rejected, never guessed):

==================================  ==========================================================================
Codex                               Pi
==================================  ==========================================================================
``shell`` / ``container.exec``      ``bash{command}``: ``["bash","-lc",X]`` / ``["bash","-c",X]`` → ``X``; any other
``{command: argv}``, the            argv → the shell-quoted join; ``workdir`` (``working_directory``) other than
``local_shell_call`` action         the session cwd → ``cd DIR && …``; ``timeout_ms`` (alias ``timeout``) →
                                    ``timeout`` seconds. Approval knobs (``sandbox_permissions``,
                                    ``with_escalated_permissions``, ``justification``…) are dropped, recorded.
``shell_command{command: str}``     ``bash{command}`` (``workdir``, ``timeout_ms`` as above; ``login`` and the
                                    approval knobs are dropped, recorded).
``exec_command{cmd}``               ``bash{command}`` (``workdir`` as above; ``yield_time_ms`` /
                                    ``max_output_tokens`` / ``shell`` / ``login`` are unified-exec knobs with no Pi
                                    meaning: dropped, recorded); ``tty: true`` → ``unmappable_arguments``.
``apply_patch`` (function, custom   one Pi ``write`` / ``edit`` per patch: see ``codex.patch``.
tool, argv or heredoc in a command)
``update_plan``                     UI-only: dropped with its result where ``convert.policy`` allows it (the
                                    converter decides, before the mapping is asked).
``spawn_agent`` & co.               ``subagent``.
``write_stdin``, ``view_image``,    ``unsupported_tool``, with why (an interactive session's input; an image
``read_file``, ``grep_files``,      attachment; numbered, cut lines; file names, not lines; ``tool_search``,
everything else                     ``web_search``, MCP…).
==================================  ==========================================================================

Results (``codex.results``): every output shape Codex has written (the JSON envelope, the freeform ``Exit code:``
text, the unified-exec ``Process exited with code`` text, the ``sandbox denied exec error`` text older codex-rs wrote
for any non-zero exit) becomes Pi's bash text (output or ``(no output)``, and
``\\n\\nCommand exited with code N`` when N ≠ 0). Outputs Pi would have truncated (over 2000 lines or 50 KB: Pi
appends a random temp-file path), outputs Codex truncated, timeouts, still-running processes, outputs without an exit
status and failed patches cannot be rendered exactly: ``unmappable_result`` (the call is an exact label; the context
after it is not). A command or patch the user refused in Codex's approval prompt is ``user_rejected_call``.
Uniqueness of an edit's old text in the file cannot be checked from a rollout; that limit is recorded on every
mapped patch (``codex.apply_patch.update->edit``).
"""

from __future__ import annotations

import posixpath
import shlex
from typing import Any

from harnessfit.core.rejection import Reason
from harnessfit.core.trajectory import Step, ToolCall
from harnessfit.formats.base import Failure, MapContext, MapOutcome, PiCall, arg_failure, parse_arguments, unsupported
from harnessfit.formats.codex.patch import (
    SHELL_WRAPPERS,
    Patch,
    PatchFile,
    invokes_patch,
    map_patch,
    parse_patch,
    patch_from_argv,
    patch_from_script,
    patch_text,
)
from harnessfit.formats.codex.results import bash_result, refused, sandbox_denied

__all__ = [
    "CodexMapping",
    "Patch",
    "PatchFile",
    "parse_patch",
    "argv_to_command",
]

SUBAGENT_TOOLS = frozenset({"spawn_agent", "wait_agent", "close_agent", "send_input", "resume_agent", "list_agents"})
SHELL_TOOLS = frozenset({"shell", "container.exec"})
_WHY = {
    "write_stdin": "it writes to a running exec_command session; Pi's bash runs each command to its end",
    "view_image": (
        "it attaches an image to the model's context; Pi's read would send the image as Pi loads it, which "
        "the rollout does not hold"
    ),
    "read_file": (
        "its lines come as 'L<n>: …' without the file's line endings and cut at 500 bytes, so Pi's read "
        "text (the file as it is) cannot be rebuilt"
    ),
    "grep_files": (
        "it lists the files that match (rg --files-with-matches, newest first), not the matching lines Pi's grep shows"
    ),
}


def argv_to_command(argv: list[str]) -> str:
    """A Codex argv as the bash command string Pi would run."""
    if len(argv) == 3 and (argv[0], argv[1]) in SHELL_WRAPPERS:
        return argv[2]
    return shlex.join(argv)


def _with_workdir(command: str, workdir: Any, cwd: str) -> tuple[str, tuple[str, ...]]:
    if workdir in (None, "", ".") or not isinstance(workdir, str):
        return command, ()
    if posixpath.normpath(posixpath.join(cwd, workdir)) == posixpath.normpath(cwd):
        return command, ()
    return f"cd {shlex.quote(workdir)} && {command}", ("codex.workdir->cd",)


def _timeout(args: dict[str, Any], tool: str) -> tuple[int | float | None, Failure | None]:
    """Pi's ``timeout`` (seconds) from Codex's ``timeout_ms`` or its serde alias ``timeout`` (milliseconds too)."""
    given = [k for k in ("timeout_ms", "timeout") if args.get(k) is not None]
    if len(given) > 1:
        return None, arg_failure(
            tool, "both timeout_ms and its alias timeout are given (Codex refuses the call)", "give one of them"
        )
    if not given:
        return None, None
    ms = args[given[0]]
    if not isinstance(ms, int) or isinstance(ms, bool) or ms <= 0:
        return None, arg_failure(tool, f"{given[0]} {ms!r} is not a positive integer", "fix the timeout")
    return (ms // 1000 if ms % 1000 == 0 else ms / 1000), None


def _dropped(tool: str, args: dict[str, Any], used: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"codex.{tool}.drop:{k}" for k in sorted(args) if k not in used)


class CodexMapping:
    """Maps Codex rollout tool calls (every layout and tool generation, see the table above) to Pi."""

    def map_call(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome:
        name = call.name
        if name in SUBAGENT_TOOLS:
            return Failure(
                Reason.subagent,
                f"tool {name!r} drives Codex sub-agents",
                "Pi has no sub-agents: keep only sessions without spawn_agent/wait_agent",
            )
        patch = patch_text(name, call.arguments)
        if patch is not None:
            return map_patch((patch, None), None, ctx, result)
        if name in SHELL_TOOLS:
            return self._shell(call, result, ctx)
        if name == "shell_command":
            return self._shell_command(call, result, ctx)
        if name == "exec_command":
            return self._exec(call, result, ctx)
        if name == "local_shell" and isinstance(call.arguments, dict):
            action = call.arguments
            args = {
                "command": action.get("command"),
                "workdir": action.get("working_directory"),
                "timeout_ms": action.get("timeout_ms"),
            }
            return self._argv(
                args,
                result,
                ctx,
                "local_shell",
                _dropped("local_shell", action, ("type", "command", "working_directory", "timeout_ms")),
            )
        if name in _WHY:
            return unsupported(name, _WHY[name])
        return unsupported(name or "<unnamed>")

    def _shell(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome:
        args = parse_arguments(call.arguments, call.name)
        if isinstance(args, Failure):
            return args
        return self._argv(
            args, result, ctx, call.name, _dropped("shell", args, ("command", "workdir", "timeout_ms", "timeout"))
        )

    def _argv(
        self, args: dict[str, Any], result: Step | None, ctx: MapContext, tool: str, dropped: tuple[str, ...]
    ) -> MapOutcome:
        argv = args.get("command")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            return arg_failure(tool, "command is not a non-empty list of strings", "command must be an argv list")
        found = patch_from_argv(argv)
        if found is not None:
            return map_patch(found, args.get("workdir"), ctx, result)
        command = argv_to_command(argv)
        return self._bash(command, args, result, ctx, tool, (f"codex.{tool}->bash",), dropped)

    def _bash(
        self,
        command: str,
        args: dict[str, Any],
        result: Step | None,
        ctx: MapContext,
        tool: str,
        notes: tuple[str, ...],
        dropped: tuple[str, ...],
    ) -> MapOutcome:
        """A command string run in ``args["workdir"]`` with ``args``' timeout, as a Pi bash call."""
        bad = invokes_patch(command)
        if bad is not None:
            return bad
        no = refused(result)
        if no is not None:
            return no
        timeout, bad = _timeout(args, tool)
        if bad is not None:
            return bad
        command, cd = _with_workdir(command, args.get("workdir"), ctx.cwd)
        arguments: dict[str, Any] = {"command": command}
        if timeout is not None:
            arguments["timeout"] = timeout
        denied = ("codex.sandbox_denied_output",) if result is not None and sandbox_denied(result.text or "") else ()
        return PiCall("bash", arguments, bash_result(result, ctx.card, tool), (*notes, *cd, *dropped, *denied))

    def _shell_command(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome:
        args = parse_arguments(call.arguments, "shell_command")
        if isinstance(args, Failure):
            return args
        return self._script(
            "command",
            args,
            args,
            result,
            ctx,
            "shell_command",
            None,
            _dropped("shell_command", args, ("command", "workdir", "timeout_ms", "timeout")),
        )

    def _exec(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome:
        args = parse_arguments(call.arguments, "exec_command")
        if isinstance(args, Failure):
            return args
        tty = (
            arg_failure("exec_command", "tty=true (interactive terminal)", "Pi's bash has no TTY")
            if args.get("tty")
            else None
        )
        used = ("cmd", "workdir")
        return self._script(
            "cmd",
            args,
            {k: v for k, v in args.items() if k in used},
            result,
            ctx,
            "exec_command",
            tty,
            _dropped("exec_command", args, used),
        )

    def _script(
        self,
        key: str,
        args: dict[str, Any],
        bash_args: dict[str, Any],
        result: Step | None,
        ctx: MapContext,
        tool: str,
        refuse: Failure | None,
        dropped: tuple[str, ...],
    ) -> MapOutcome:
        """A command *string* (``args[key]``), as ``_argv`` takes an argv list: a patch it runs, else a bash call with
        ``bash_args``' workdir and timeout; ``refuse`` (a tool-specific failure) wins once the string is there."""
        cmd = args.get(key)
        if not isinstance(cmd, str) or not cmd.strip():
            return arg_failure(tool, f"{key} is missing or empty", f"{key} must be the command string")
        if refuse is not None:
            return refuse
        found = patch_from_script(cmd)
        if found is not None:
            return map_patch(found, args.get("workdir"), ctx, result)
        return self._bash(cmd, bash_args, result, ctx, tool, (f"codex.{tool}->bash",), dropped)
