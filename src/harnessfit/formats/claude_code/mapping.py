"""Claude Code → Pi mapping table (exact mappings only; everything else is rejected with a reason).

| Claude | Pi | notes |
|---|---|---|
| Read{file_path, offset?, limit?} | read{path, offset?, limit?} | result: file text without ``N→``/``N\\t`` prefixes or ``<system-reminder>`` blocks, Pi's "more lines" note |
| Edit{file_path, old_string, new_string} | edit{path, edits:[{oldText, newText}]} | ``replace_all: true`` → unmappable (Pi replaces one match) |
| MultiEdit{file_path, edits[]} | edit{path, edits:[…]} | one Pi edit with several entries; any replace_all → unmappable |
| Write{file_path, content} | write{path, content} | result ``Successfully wrote N bytes to PATH`` |
| Bash{command, timeout?} | bash{command, timeout?} | timeout ms → s (ceil); the result is never Pi's text (below) |
| TodoWrite, TaskCreate, TaskUpdate, ExitPlanMode, mcp__happy__change_title | UI-only | dropped with their results where ``convert.policy`` allows it (decided before the mapping is asked) |
| AskUserQuestion | unsupported | it hands control to the user mid-turn; Pi has no such tool |
| Grep{pattern, path, output_mode: content, -n, -i?, glob?} | grep{pattern, path, ignoreCase?, glob?} | only with the tools profile (``pi@V+tools``) and only a search of one file (``formats.claude_code.search``) |
| Glob, LS | blocked | with the tools profile: never exact as find/ls (``formats.claude_code.search`` says why); else unsupported, naming why the profile would not help |
| Task, WebFetch, WebSearch, NotebookEdit, mcp__* … | unsupported | not in Pi's default tool set |

Sizes: Claude Code cuts what Pi would not and Pi cuts what Claude Code would not, so such results are not re-rendered
(``unmappable_result``, detail "<Tool> result: …": the call itself is an exact label, the context after it is not): a Read whose content Pi's
2000-line / 50 KB cap would cut; a Read without ``limit`` that Claude stopped before the end of the file (its own
2000-line cap: Pi's continuation note would differ); a Read holding a line of 2000+ characters (Claude cuts long
lines).

Bash results: Claude Code keeps no command's raw output. Its tool result is stdout with leading blank lines removed and
trailing whitespace (the final newline) trimmed, then stderr trimmed, on a line of its own (``BashTool``'s
``mapToolResultToToolResultBlockParam`` in 1.0.108 and 2.0.27; ``toolUseResult.stdout`` keeps no final newline
either), while Pi sends the merged output as the command wrote it. So a Bash call is an exact label, but its result
is never byte-exact: at fidelity tier ``byte`` it is ``unmappable_result`` (the context after it is not exact), with
the detail the data gives. At tier ``content`` (``formats.base.Altered``) Pi's bash text is rendered from the
recorded output and exit code, and the alterations are named on the record: ``claude_code.bash_edges_trimmed`` and
``claude_code.bash_stderr_apart`` (no output at all, or only whitespace, is Pi's ``(no output)``). What stays
``unmappable_result`` at both tiers: output Claude Code truncated or persisted to a file (the content is unknown), an
error without an exit code, and output over Pi's own limits.

Errors are re-worded as Pi words them where the meaning is the same (missing file → ``ENOENT…``; edit text not
found → Pi's "Could not find the exact text…"); any other error result is ``unmappable_result`` rather than
guessed. A result with images is ``image_content`` (a result problem too). An interrupted Bash call is an aborted
action (``aborted_or_error_turn``): never a label.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from harnessfit.core.rejection import Reason, excerpt
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
from harnessfit.formats.claude_code.search import map_glob, map_grep, map_ls
from harnessfit.harness.pi_results import (
    pi_bash_result,
    pi_edit_no_match,
    pi_edit_result,
    pi_file_not_found,
    pi_read_result,
    pi_write_result,
)

if TYPE_CHECKING:
    from harnessfit.harness.card import HarnessCard

__all__ = ["BASH_ALTERATIONS", "ClaudeCodeMapping", "strip_read_prefixes", "strip_system_reminders"]

_LINE_PREFIX = re.compile(r"^ *\d+(?:\u2192|\t)", re.MULTILINE)
_REMINDER = re.compile(r"\n*<system-reminder>.*?</system-reminder>\n*", re.DOTALL)
_EXIT = re.compile(r"^(?:Error: )?Exit code (\d+)\n?")
CLAUDE_READ_MAX_LINES = 2000
CLAUDE_READ_MAX_LINE_CHARS = 2000
_CLAUDE_BASH_CUT = re.compile(r"\[\d+ (?:lines|characters) truncated\]|<persisted-output>|Output too large")
_NO_OUTPUT = re.compile(r"\(Bash completed with no output\)|<system>Tool ran without output or errors</system>")
"""Claude Code's own words for a command that printed nothing (2.1, and 0.2/1.0)."""
BASH_ALTERATIONS = ("claude_code.bash_edges_trimmed", "claude_code.bash_stderr_apart")
"""What Claude Code does to every Bash output it records (the module docstring cites where)."""


def strip_system_reminders(text: str) -> str:
    """Remove ``<system-reminder>…</system-reminder>`` blocks Claude Code appends to results."""
    return _REMINDER.sub("", text)


def strip_read_prefixes(text: str) -> str:
    """Remove Claude's ``     N→`` (or ``N<TAB>``) line-number prefixes from a Read result."""
    return _LINE_PREFIX.sub("", text)


def _tool_use_result(result: Step | None) -> Any:
    return (result.meta or {}).get("toolUseResult") if result is not None else None


def _claude_read_cut(content: str, start: int, shown: Any, total: Any, limited: bool) -> str | None:
    """Why Claude's Read view may not be the file text Pi would show (``None`` when it is)."""
    longest = max((len(line) for line in content.split("\n")), default=0)
    if longest >= CLAUDE_READ_MAX_LINE_CHARS:
        return f"a line of {longest} characters (Claude Code cuts lines at {CLAUDE_READ_MAX_LINE_CHARS})"
    if limited:
        return None
    if isinstance(shown, int) and isinstance(total, int):
        if start - 1 + shown < total:
            return f"no limit, yet Claude Code showed lines {start}-{start - 1 + shown} of {total} (its own cap)"
        return None
    lines = content.count("\n") + 1
    if lines >= CLAUDE_READ_MAX_LINES:
        return f"{lines} lines without a limit: Claude Code may have stopped at its {CLAUDE_READ_MAX_LINES}-line cap"
    return None


def _bash_result(card: HarnessCard, text: str, is_error: bool | None) -> Failure | Altered:
    """Claude Code never keeps a command's raw output (the module docstring): an ``Altered`` holding Pi's bash text
    rendered from the recorded output (its ``failure`` says, for the byte tier, what the data shows: no output, or
    output whose edges were trimmed), or a ``Failure`` where even the content is unknown (an error without an exit
    code, output Claude Code cut, output over Pi's limits)."""
    hint = "re-run the command under Pi (Claude Code keeps no raw output)"
    output, code = text, 0
    if is_error:
        m = _EXIT.match(text)
        if not m:
            return result_failure(
                "Bash",
                f"an error without an exit code ({excerpt(text, 100)!r}), which Pi's bash text needs",
                "re-run the command under Pi",
            )
        output, code = text[m.end() :], int(m.group(1))
    cut = _CLAUDE_BASH_CUT.search(output)
    if cut is not None:
        return result_failure(
            "Bash", f"Claude Code truncated the output ({cut.group(0)!r}); the real output is unknown", hint
        )
    if not output.strip() or _NO_OUTPUT.fullmatch(output.strip()):
        output = ""
        failure = result_failure(
            "Bash",
            f"no output recorded (exit code {code}), but Claude Code trims whitespace, "
            "so the command printed nothing or only blank lines, and Pi's text differs between "
            "them",
            hint,
        )
    else:
        failure = result_failure(
            "Bash",
            f"{len(output)} characters of output whose edges Claude Code trimmed "
            "(leading blank lines, trailing whitespace such as the final newline) and whose "
            "stderr it keeps apart from stdout, so Pi's exact text is unknown",
            hint,
        )
    rendered = pi_bash_result(card, output, code, tool="Bash")
    return Altered(rendered, BASH_ALTERATIONS, failure)


class ClaudeCodeMapping:
    """Maps Claude Code tool calls to Pi's read/bash/edit/write (see the module table)."""

    def map_call(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome:
        name = call.name
        handler = {
            "Read": self._read,
            "Edit": self._edit,
            "MultiEdit": self._multi_edit,
            "Write": self._write,
            "Bash": self._bash,
            "Grep": map_grep,
            "Glob": map_glob,
            "LS": map_ls,
        }.get(name)
        if handler is None:
            return unsupported(name)
        args = parse_arguments(call.arguments, name)
        if isinstance(args, Failure):
            return args
        out = handler(args, result, ctx)
        if result is not None and result.images and isinstance(out, PiCall):
            return with_result(
                out,
                Failure(
                    Reason.image_content,
                    f"{name} result holds {result.images} image(s)",
                    "a text-only model cannot see them: keep the session up to this call, or convert for a vision model",
                ),
            )
        return out

    # -- read ------------------------------------------------------------------------------------------------
    def _read(self, args: dict[str, Any], result: Step | None, ctx: MapContext) -> MapOutcome:
        path = args.get("file_path")
        if not isinstance(path, str):
            return arg_failure("Read", "file_path missing or not a string", "give Read a file_path")
        extra = set(args) - {"file_path", "offset", "limit"}
        if extra:
            return arg_failure("Read", f"arguments Pi's read lacks: {sorted(extra)}", "drop them (e.g. pages)")
        pi_args: dict[str, Any] = {"path": path}
        for key in ("offset", "limit"):
            if args.get(key) is not None:
                pi_args[key] = args[key]
        tr = ["claude.Read->read"]
        if result is None:
            return PiCall("read", pi_args, None, tuple(tr))
        if result.is_error:
            text = result.text or ""
            if "does not exist" in text or "ENOENT" in text:
                abs_path = path if path.startswith("/") else f"{ctx.cwd.rstrip('/')}/{path}"
                return PiCall("read", pi_args, pi_file_not_found(ctx.card, abs_path), (*tr, "error.file_not_found"))
            return PiCall(
                "read",
                pi_args,
                result_failure(
                    "Read",
                    f"an error Pi words differently or not at all ({excerpt(text, 100)!r})",
                    "Pi's read errors are its own texts: re-run the read under Pi",
                ),
                tuple(tr),
            )
        tur = _tool_use_result(result)
        file_info = tur.get("file") if isinstance(tur, dict) else None
        if isinstance(file_info, dict) and isinstance(file_info.get("content"), str):
            content = file_info["content"]
            tr.append("read_result.from_toolUseResult")
            start = int(file_info.get("startLine") or 1)
            shown = file_info.get("numLines")
            total = file_info.get("totalLines")
        else:
            content = strip_read_prefixes(strip_system_reminders(result.text or ""))
            tr.append("read_result.strip_line_numbers")
            start, shown, total = int(pi_args.get("offset") or 1), None, None
        limited = "limit" in pi_args
        cut = _claude_read_cut(content, start, shown, total, limited)
        if cut is not None:
            return PiCall(
                "read",
                pi_args,
                result_failure("Read", cut, "re-read the file in parts that fit, or re-run under Pi"),
                tuple(tr),
            )
        text = pi_read_result(
            ctx.card,
            content,
            start=start,
            total=total if isinstance(total, int) else None,
            shown=shown if isinstance(shown, int) else None,
            limited=limited,
            tool="Read",
        )
        return PiCall("read", pi_args, text, tuple(tr))

    # -- edit ------------------------------------------------------------------------------------------------
    def _edit_result(self, path: str, count: int, result: Step | None, ctx: MapContext, tr: list[str]) -> PiCall:
        if result is None:
            return PiCall("edit", {}, None, tuple(tr))
        if result.is_error:
            text = result.text or ""
            if "not found in file" in text or "String to replace not found" in text:
                return PiCall("edit", {}, pi_edit_no_match(ctx.card, path), (*tr, "error.edit_no_match"))
            return PiCall(
                "edit",
                {},
                result_failure(
                    "Edit",
                    f"an error Pi words differently or not at all ({excerpt(text, 100)!r})",
                    "Pi's edit errors are its own texts: re-run the edit under Pi",
                ),
                tuple(tr),
            )
        return PiCall("edit", {}, pi_edit_result(ctx.card, path, count), tuple(tr))

    def _edit(self, args: dict[str, Any], result: Step | None, ctx: MapContext) -> MapOutcome:
        path = args.get("file_path")
        old, new = args.get("old_string"), args.get("new_string")
        if not isinstance(path, str) or not isinstance(old, str) or not isinstance(new, str):
            return arg_failure("Edit", "file_path/old_string/new_string missing or not strings", "complete the call")
        if args.get("replace_all"):
            return arg_failure(
                "Edit",
                "replace_all=true replaces every match; Pi's edit replaces exactly one",
                "split into one edit per occurrence with unique context",
            )
        extra = set(args) - {"file_path", "old_string", "new_string", "replace_all"}
        if extra:
            return arg_failure("Edit", f"unknown arguments {sorted(extra)}", "drop them")
        out = self._edit_result(path, 1, result, ctx, ["claude.Edit->edit"])
        return PiCall(
            "edit", {"path": path, "edits": [{"oldText": old, "newText": new}]}, out.result, out.transformations
        )

    def _multi_edit(self, args: dict[str, Any], result: Step | None, ctx: MapContext) -> MapOutcome:
        path, edits = args.get("file_path"), args.get("edits")
        if not isinstance(path, str) or not isinstance(edits, list) or not edits:
            return arg_failure("MultiEdit", "file_path/edits missing", "complete the call")
        pi_edits = []
        for e in edits:
            if (
                not isinstance(e, dict)
                or not isinstance(e.get("old_string"), str)
                or not isinstance(e.get("new_string"), str)
            ):
                return arg_failure("MultiEdit", "an edit lacks old_string/new_string", "complete each edit")
            if e.get("replace_all"):
                return arg_failure("MultiEdit", "replace_all=true in an edit", "split it into unique edits")
            pi_edits.append({"oldText": e["old_string"], "newText": e["new_string"]})
        out = self._edit_result(path, len(pi_edits), result, ctx, ["claude.MultiEdit->edit"])
        return PiCall("edit", {"path": path, "edits": pi_edits}, out.result, out.transformations)

    # -- write -----------------------------------------------------------------------------------------------
    def _write(self, args: dict[str, Any], result: Step | None, ctx: MapContext) -> MapOutcome:
        path, content = args.get("file_path"), args.get("content")
        if not isinstance(path, str) or not isinstance(content, str):
            return arg_failure("Write", "file_path/content missing or not strings", "complete the call")
        pi_args = {"path": path, "content": content}
        tr = ("claude.Write->write",)
        if result is None:
            return PiCall("write", pi_args, None, tr)
        if result.is_error:
            return PiCall(
                "write",
                pi_args,
                result_failure(
                    "Write",
                    f"an error Pi words differently or not at all ({excerpt(result.text or '', 100)!r})",
                    "Pi's write errors are its own texts: re-run the write under Pi",
                ),
                tr,
            )
        return PiCall("write", pi_args, pi_write_result(ctx.card, path, content), tr)

    # -- bash ------------------------------------------------------------------------------------------------
    def _bash(self, args: dict[str, Any], result: Step | None, ctx: MapContext) -> MapOutcome:
        command = args.get("command")
        if not isinstance(command, str):
            return arg_failure("Bash", "command missing or not a string", "complete the call")
        if args.get("run_in_background"):
            return arg_failure("Bash", "run_in_background has no Pi equivalent", "run it in the foreground")
        pi_args: dict[str, Any] = {"command": command}
        tr = ["claude.Bash->bash"]
        timeout = args.get("timeout")
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
            pi_args["timeout"] = math.ceil(timeout / 1000)
            tr.append("bash.timeout_ms->s")
        if result is None:
            return PiCall("bash", pi_args, None, tuple(tr))
        text = strip_system_reminders(result.text or "")
        tur = _tool_use_result(result)
        if isinstance(tur, dict) and tur.get("interrupted"):
            return Failure(
                Reason.aborted_or_error_turn,
                f"Bash {excerpt(command, 60)!r} was interrupted by the user",
                "an interrupted call is not a finished action: keep the session up to it",
            )
        return PiCall("bash", pi_args, _bash_result(ctx.card, text, result.is_error), tuple(tr))
