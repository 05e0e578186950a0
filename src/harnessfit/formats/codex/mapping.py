"""Codex tool calls → Pi calls, with results re-rendered as Pi's bash / edit / write would have written them.

Mapping table (anything not listed is rejected, never guessed):

===========================  =================================================================================
Codex                        Pi
===========================  =================================================================================
``shell{command: argv}``     ``bash{command}``: ``["bash","-lc",X]`` / ``["bash","-c",X]`` → ``X``; any other argv
                             → the shell-quoted join; ``workdir`` other than the session cwd → ``cd DIR && …``;
                             ``timeout_ms`` → ``timeout`` seconds.
``exec_command{cmd}``        ``bash{command}`` (``workdir`` as above; ``yield_time_ms`` / ``max_output_tokens``
                             are Codex output-streaming knobs with no Pi meaning: dropped, recorded).
``apply_patch`` (heredoc in  one file per patch: ``*** Add File`` → ``write{path, content}``; ``*** Update File``
shell, argv, function or     hunks → ``edit{path, edits:[{oldText, newText}]}`` (old text = context + removed
custom tool)                 lines). Delete, Move, several files, hunks without old text, overlapping hunks
                             → ``unmappable_arguments``.
``update_plan``              UI-only: dropped with its result where ``convert.policy`` allows it (the converter decides,
                             before the mapping is asked).
``spawn_agent`` & co.        ``subagent``.
everything else              ``unsupported_tool`` (``tool_search``, ``web_search``, ``write_stdin``, MCP…).
===========================  =================================================================================

Results: the 2025 JSON envelope ``{"output", "metadata": {"exit_code"}}`` and the 2026 plain text ("Process
exited with code N … Output:") become Pi's bash text (output or ``(no output)``, and ``\\n\\nCommand exited with
code N`` when N ≠ 0). Outputs Pi would have truncated (over 2000 lines or 50 KB: Pi appends a random temp-file
path), outputs Codex truncated, still-running processes, sandbox refusals and failed patches cannot be rendered
exactly: ``unmappable_result`` (the call is an exact label; the context after it is not).
Uniqueness of an edit's old text in the file cannot be checked from a rollout; that limit is recorded on every
mapped patch (``codex.apply_patch.update->edit``).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import orjson

from harnessfit.core.rejection import Reason
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
)
from harnessfit.harness.card import HarnessCard
from harnessfit.harness.pi_results import pi_bash_result, pi_edit_result, pi_write_result

__all__ = [
    "CodexMapping",
    "Patch",
    "PatchFile",
    "parse_patch",
    "argv_to_command",
]

SUBAGENT_TOOLS = frozenset({"spawn_agent", "wait_agent", "close_agent", "send_input", "resume_agent", "list_agents"})
SHELL_WRAPPERS = {("bash", "-lc"), ("bash", "-c"), ("/bin/bash", "-lc"), ("/bin/bash", "-c")}
CODEX_TRUNCATION = re.compile(r"\[\.\.\. omitted \d+ of \d+ lines \.\.\.\]|…\d+ tokens truncated…|tokens truncated")
HEREDOC = re.compile(r"\Aapply_patch\s+<<-?\s*(['\"]?)(\w+)\1[ \t]*\n(?P<body>.*?)\n(\2)[ \t]*\n?\s*\Z", re.S)


# ---------------------------------------------------------------- commands
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


# ---------------------------------------------------------------- apply_patch
@dataclass(slots=True)
class PatchFile:
    """One file section of a Codex patch: ``op`` is add / update / delete; hunks as (old, new) text pairs."""

    op: str
    path: str
    move_to: str | None = None
    add_lines: list[str] = field(default_factory=list)
    hunks: list[tuple[str, str]] = field(default_factory=list)


@dataclass(slots=True)
class Patch:
    files: list[PatchFile]


class PatchError(ValueError):
    """The text is not a well-formed Codex patch."""


def parse_patch(text: str) -> Patch:
    """Parse Codex's ``*** Begin Patch`` … ``*** End Patch`` format (strict: anything unknown is an error)."""
    lines = text.strip("\n").split("\n")
    if not lines or lines[0].strip() != "*** Begin Patch" or lines[-1].strip() != "*** End Patch":
        raise PatchError("missing *** Begin Patch / *** End Patch")
    files: list[PatchFile] = []
    cur: PatchFile | None = None
    old: list[str] = []
    new: list[str] = []
    in_hunk = False

    def close_hunk() -> None:
        nonlocal old, new, in_hunk
        if cur is not None and in_hunk:
            cur.hunks.append(("\n".join(old), "\n".join(new)))
        old, new, in_hunk = [], [], False

    for line in lines[1:-1]:
        for op, prefix in (("add", "*** Add File: "), ("update", "*** Update File: "), ("delete", "*** Delete File: ")):
            if line.startswith(prefix):
                close_hunk()
                cur = PatchFile(op=op, path=line[len(prefix):].strip())
                files.append(cur)
                break
        else:
            if cur is None:
                raise PatchError(f"text before the first file header: {line[:60]!r}")
            if line.startswith("*** Move to: "):
                cur.move_to = line[len("*** Move to: "):].strip()
            elif line.strip() == "*** End of File":
                continue
            elif cur.op == "add":
                if not line.startswith("+"):
                    raise PatchError(f"Add File line without '+': {line[:60]!r}")
                cur.add_lines.append(line[1:])
            elif cur.op == "update":
                if line.startswith("@@"):
                    close_hunk()
                    in_hunk = True
                elif line[:1] in (" ", "-", "+") or line == "":
                    if not in_hunk and (cur.hunks or old or new):
                        raise PatchError("hunk line outside a hunk")
                    in_hunk = True
                    body = line[1:]
                    if line[:1] in (" ", ""):
                        old.append(body)
                        new.append(body)
                    elif line[0] == "-":
                        old.append(body)
                    else:
                        new.append(body)
                else:
                    raise PatchError(f"unexpected line in Update File: {line[:60]!r}")
            else:
                raise PatchError(f"unexpected line after Delete File: {line[:60]!r}")
    close_hunk()
    if not files:
        raise PatchError("patch names no file")
    return Patch(files=files)


def _patch_text(call_name: str, args: Any) -> str | None:
    """The patch body if this call is an apply_patch in any of its Codex spellings, else ``None``."""
    if call_name == "apply_patch":
        if isinstance(args, str):
            stripped = args.strip()
            if stripped.startswith("*** Begin Patch"):
                return stripped
            try:
                args = orjson.loads(args)
            except orjson.JSONDecodeError:
                return None
        if isinstance(args, dict) and isinstance(args.get("input"), str):
            return args["input"]
        return None
    return None


def _patch_from_argv(argv: list[str]) -> str | None:
    if len(argv) == 2 and argv[0] in ("apply_patch", "applypatch"):
        return argv[1]
    if len(argv) == 3 and (argv[0], argv[1]) in SHELL_WRAPPERS:
        m = HEREDOC.match(argv[2].strip() + "\n")
        if m:
            return m.group("body")
    return None


def _map_patch(text: str, workdir: Any, ctx: MapContext, output: str | None) -> MapOutcome:
    try:
        patch = parse_patch(text)
    except PatchError as exc:
        return arg_failure("apply_patch", f"malformed patch ({exc})", "fix the patch text")
    if len(patch.files) != 1:
        return arg_failure(
            "apply_patch", f"patch touches {len(patch.files)} files; one Pi edit/write covers one file",
            "split the patch into one call per file",
        )
    f = patch.files[0]
    if f.op == "delete":
        return arg_failure("apply_patch", "*** Delete File has no Pi tool", "delete with a bash rm call instead")
    if f.move_to:
        return arg_failure("apply_patch", "*** Move to (rename) has no Pi tool", "rename with bash mv, then edit")
    path = f.path
    notes: tuple[str, ...] = ()
    if isinstance(workdir, str) and workdir not in ("", ".") and not posixpath.isabs(path):
        joined = posixpath.normpath(posixpath.join(workdir, path))
        if posixpath.normpath(posixpath.join(ctx.cwd, workdir)) != posixpath.normpath(ctx.cwd):
            path, notes = joined, ("codex.apply_patch.workdir->path",)
    failed: Failure | None = None
    if output is not None:
        ok, detail = _patch_succeeded(output)
        if not ok:
            failed = result_failure(
                "apply_patch", detail,
                "Pi words a failed edit differently: keep the session up to the patch, or re-run it under Pi")
    if f.op == "add":
        content = "\n".join(f.add_lines) + "\n" if f.add_lines else ""
        result = failed or (pi_write_result(ctx.card, path, content) if output is not None else None)
        return PiCall("write", {"path": path, "content": content}, result, ("codex.apply_patch.add->write", *notes))
    if not f.hunks:
        return arg_failure("apply_patch", f"Update File {f.path} has no hunks", "include at least one hunk")
    edits = []
    for old, new in f.hunks:
        if not old.strip():
            return arg_failure(
                "apply_patch", f"a hunk in {f.path} has no context or removed lines (insert position ambiguous)",
                "include context lines so the old text locates the change",
            )
        edits.append({"oldText": old, "newText": new})
    olds = [e["oldText"] for e in edits]
    for i, a in enumerate(olds):
        for j, b in enumerate(olds):
            if i != j and a in b:
                return arg_failure(
                    "apply_patch", f"hunks {i + 1} and {j + 1} of {f.path} overlap (old text not unique)",
                    "merge the hunks or add distinguishing context",
                )
    result = failed or (pi_edit_result(ctx.card, path, len(edits)) if output is not None else None)
    return PiCall("edit", {"path": path, "edits": edits}, result, ("codex.apply_patch.update->edit", *notes))


def _patch_succeeded(output: str) -> tuple[bool, str]:
    parsed = _parse_output(output)
    if isinstance(parsed, Failure):
        return False, parsed.detail
    body, code = parsed
    if code not in (0, None):
        return False, f"patch failed with exit code {code}"
    if not body.lstrip().startswith("Success."):
        return False, f"no success line ({body[:60]!r})"
    return True, ""


# ---------------------------------------------------------------- outputs
def _parse_output(text: str) -> tuple[str, int | None] | Failure:
    """(output, exit code) from a 2025 JSON envelope or a 2026 plain-text exec result."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("output"), str):
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            code = meta.get("exit_code")
            if not isinstance(code, int):
                return result_failure("shell", "no exit_code in its metadata, and the exit status decides Pi's text",
                                      "re-record the rollout with output metadata")
            return obj["output"], code
    header, sep, body = text.partition("\nOutput:\n")
    if not sep and text.endswith("\nOutput:"):
        header, sep, body = text[: -len("\nOutput:")], "x", ""
    if sep and "Process exited with code " in header:
        m = re.search(r"^Process exited with code (-?\d+)$", header, re.M)
        if m:
            return body, int(m.group(1))
    if "Process running with session ID" in text:
        return result_failure("exec_command", "the process was still running when Codex returned (an interactive "
                              "session)", "Pi's bash waits for the command to end: re-run it non-interactively")
    return result_failure("shell", f"no exit status in the output ({text[:60]!r}): a sandbox refusal or an approval "
                          "Pi has no words for", "keep the session up to this call, or re-run it under Pi")


_REFUSAL = "exec command rejected by user"  # what Codex returns for a command the user declined to approve


def _refused(result: Step | None) -> Failure | None:
    """The user declined the command in Codex's approval prompt: a refused call is no label (Pi has no approval)."""
    if result is not None and (result.text or "").strip().startswith(_REFUSAL):
        return Failure(Reason.user_rejected_call, f"the user refused the command ({_REFUSAL!r})",
                       "Pi has no approval step: the calls before the refused one are kept")
    return None


def _bash_result(result: Step | None, card: HarnessCard) -> str | None | Failure:
    if result is None:
        return None
    parsed = _parse_output(result.text or "")
    if isinstance(parsed, Failure):
        return parsed
    output, code = parsed
    cut = CODEX_TRUNCATION.search(output)
    if cut:
        return result_failure("shell", f"Codex truncated the output ({cut.group(0)!r}); the full output is unknown",
                              "the full output is needed to render Pi's result: re-run the command")
    return pi_bash_result(card, output, code, tool="shell")


# ---------------------------------------------------------------- the mapping
class CodexMapping:
    """Maps Codex rollout tool calls (2025 ``shell``/``apply_patch`` and 2026 ``exec_command`` eras) to Pi."""

    def map_call(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome:
        name = call.name
        if name in SUBAGENT_TOOLS:
            return Failure(
                Reason.subagent, f"tool {name!r} drives Codex sub-agents",
                "Pi has no sub-agents: keep only sessions without spawn_agent/wait_agent",
            )
        patch = _patch_text(name, call.arguments)
        if patch is not None:
            return _map_patch(patch, None, ctx, None if result is None else result.text or "")
        if name == "shell":
            return self._shell(call, result, ctx)
        if name == "exec_command":
            return self._exec(call, result, ctx)
        if name == "local_shell" and isinstance(call.arguments, dict):
            action = call.arguments
            return self._argv(action.get("command"), action.get("working_directory"), action.get("timeout_ms"), result, ctx, "codex.local_shell->bash")
        return unsupported(name or "<unnamed>")

    def _shell(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome:
        args = parse_arguments(call.arguments, "shell")
        if isinstance(args, Failure):
            return args
        return self._argv(args.get("command"), args.get("workdir"), args.get("timeout_ms"), result, ctx, "codex.shell->bash")

    def _argv(self, argv: Any, workdir: Any, timeout_ms: Any, result: Step | None, ctx: MapContext, note: str) -> MapOutcome:
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            return arg_failure("shell", "command is not a non-empty list of strings", "command must be an argv list")
        patch = _patch_from_argv(argv)
        if patch is not None:
            return _map_patch(patch, workdir, ctx, None if result is None else result.text or "")
        refused = _refused(result)
        if refused is not None:
            return refused
        command, notes = _with_workdir(argv_to_command(argv), workdir, ctx.cwd)
        arguments: dict[str, Any] = {"command": command}
        if timeout_ms is not None:
            if not isinstance(timeout_ms, int) or isinstance(timeout_ms, bool) or timeout_ms <= 0:
                return arg_failure("shell", f"timeout_ms {timeout_ms!r} is not a positive integer", "fix timeout_ms")
            arguments["timeout"] = timeout_ms // 1000 if timeout_ms % 1000 == 0 else timeout_ms / 1000
        return PiCall("bash", arguments, _bash_result(result, ctx.card), (note, *notes))

    def _exec(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome:
        args = parse_arguments(call.arguments, "exec_command")
        if isinstance(args, Failure):
            return args
        cmd = args.get("cmd")
        if not isinstance(cmd, str) or not cmd.strip():
            return arg_failure("exec_command", "cmd is missing or empty", "cmd must be the command string")
        if args.get("tty"):
            return arg_failure("exec_command", "tty=true (interactive terminal)", "Pi's bash has no TTY")
        stripped = cmd.strip()
        m = HEREDOC.match(stripped + "\n")
        if m:
            return _map_patch(m.group("body"), args.get("workdir"), ctx, None if result is None else result.text or "")
        refused = _refused(result)
        if refused is not None:
            return refused
        command, notes = _with_workdir(cmd, args.get("workdir"), ctx.cwd)
        dropped = sorted(k for k in args if k not in ("cmd", "workdir"))
        extra = tuple(f"codex.exec_command.drop:{k}" for k in dropped)
        return PiCall("bash", {"command": command}, _bash_result(result, ctx.card),
                      ("codex.exec_command->bash", *notes, *extra))
