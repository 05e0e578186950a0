"""SWE-agent tool calls → Pi calls. SWE-agent's result texts are its own, so results are re-rendered into Pi's
wording only where the observation proves what Pi would have said; otherwise the trajectory is rejected.

==============================================  ==================================================================
SWE-agent                                       Pi
==============================================  ==================================================================
``str_replace_editor create``                   ``write{path, content: file_text}`` ("File created successfully")
``str_replace_editor str_replace``              ``edit{path, edits:[{oldText: old_str, newText: new_str}]}``
                                                ("has been edited")
``create{filename}``                            ``write{path, content: ""}`` (new empty file shown as "[File: …]")
``submit`` (the last call of the run)           the end of the episode: dropped with its result, its turn's text is
                                                the final answer (Pi ends a run with an answer, not a call)
``str_replace_editor view`` of a file           ``read{path, offset?, limit?}`` (``view_range``), result
                                                ``unmappable_result``: the ``cat -n`` rendering adds line numbers,
                                                expands tabs and hides the final newline, so Pi's read text cannot be
                                                rebuilt — the call is a label, the context after it is not
``str_replace_editor view`` of a directory      ``unsupported_tool``: Pi's read cannot list a directory (the result
                                                names it: "files and directories up to 2 levels deep")
``insert``, ``undo_edit``, ``open``, ``goto``,  ``unmappable_arguments``: they act on the viewer's open
``scroll_*``, ``edit{search, replace}``         file and cursor (state, not arguments)
``bash``                                        ``bash{command}``, result ``unmappable_result``: SWE-agent runs
                                                commands with ``check="ignore"`` and never records the exit status,
                                                which decides Pi's text
``find_file``, ``search_*``, others             ``unsupported_tool``
==============================================  ==================================================================

Failed editor operations (SWE-agent's error texts) are ``unmappable_result`` too: Pi words its errors differently.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from harnessfit.core.rejection import excerpt
from harnessfit.core.trajectory import Step, ToolCall
from harnessfit.formats.base import (
    Drop,
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
from harnessfit.harness.pi_results import pi_edit_result, pi_write_result

__all__ = ["SweAgentMapping", "map_str_replace_editor", "strip_swe_prompt"]

_PROMPT_TRAILER = re.compile(r"\n?\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)\n?bash-\$\s*\Z")
VIEWER_STATE = frozenset({"insert", "open", "goto", "scroll_up", "scroll_down", "edit"})


def strip_swe_prompt(text: str) -> str:
    """Remove SWE-agent's ``(Open file: …)(Current directory: …) bash-$`` prompt from an observation."""
    return _PROMPT_TRAILER.sub("", text)


_DIR_VIEW = re.compile(r"\AHere's the files and directories up to \d+ levels? deep in ")


def _result_failure(tool: str, text: str) -> Failure:
    return result_failure(
        tool,
        f"not a success Pi could word exactly ({excerpt(text, 80)!r})",
        "keep the session up to this call, or re-run the task under Pi so the error text is Pi's own",
    )


def _view(args: dict[str, Any], path: str, text: str | None, prefix: str) -> MapOutcome:
    """``view``: a file view is Pi's read (its result cannot be rebuilt); a directory view has no Pi default tool."""
    if text is not None and _DIR_VIEW.match(text):
        return unsupported(
            "str_replace_editor view",
            f"{path} is a directory (the result lists its files and directories): Pi's read cannot list one",
            "list it with a bash ls call, or convert with a card that enables Pi's optional ls tool",
        )
    pi_args: dict[str, Any] = {"path": path}
    rng = args.get("view_range")
    if rng is not None:
        if not (
            isinstance(rng, list)
            and len(rng) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in rng)
            and rng[0] >= 1
        ):
            return arg_failure(
                "str_replace_editor view",
                f"view_range {rng!r} is not [start, end]",
                "give view_range as two line numbers",
            )
        pi_args["offset"] = rng[0]
        if rng[1] != -1:
            if rng[1] < rng[0]:
                return arg_failure(
                    "str_replace_editor view",
                    f"view_range {rng!r} ends before it starts",
                    "give view_range as [start, end] with end >= start",
                )
            pi_args["limit"] = rng[1] - rng[0] + 1
    result = (
        None
        if text is None
        else result_failure(
            "str_replace_editor view",
            "the editor's `cat -n` rendering (line numbers added, tabs expanded, the final "
            "newline hidden) is not the file text Pi's read returns",
            "record the raw file content, or re-run the read under Pi",
        )
    )
    return PiCall("read", pi_args, result, (f"{prefix}.str_replace_editor.view->read",))


def map_str_replace_editor(
    args: dict[str, Any], result: Step | None, prefix: str, success: Callable[[str, str], bool], card: HarnessCard
) -> MapOutcome:
    """Shared by SWE-agent and OpenHands (both use the ``str_replace_editor`` family).

    ``success(command, observation_text)`` says whether the observation proves the operation succeeded.
    """
    command = args.get("command")
    path = args.get("path")
    if not isinstance(path, str) or not path:
        return arg_failure("str_replace_editor", "path is missing", "give the file path")
    text = None if result is None else strip_swe_prompt(result.text or "")
    error = text is not None and result is not None and bool(result.is_error)
    if command == "create":
        content = args.get("file_text")
        if not isinstance(content, str):
            return arg_failure("str_replace_editor", "create without file_text", "give the file text")
        out = None if text is None else pi_write_result(card, path, content)
        if text is not None and (error or not success("create", text)):
            out = _result_failure("str_replace_editor create", text)
        return PiCall("write", {"path": path, "content": content}, out, (f"{prefix}.str_replace_editor.create->write",))
    if command == "str_replace":
        old, new = args.get("old_str"), args.get("new_str", "")
        if not isinstance(old, str) or not old:
            return arg_failure("str_replace_editor", "str_replace without old_str", "give the text to replace")
        if new is None:
            new = ""
        if not isinstance(new, str):
            return arg_failure("str_replace_editor", "new_str is not a string", "new_str must be text")
        out = None if text is None else pi_edit_result(card, path, 1)
        if text is not None and (error or not success("str_replace", text)):
            out = _result_failure("str_replace_editor str_replace", text)
        return PiCall(
            "edit",
            {"path": path, "edits": [{"oldText": old, "newText": new}]},
            out,
            (f"{prefix}.str_replace_editor.str_replace->edit",),
        )
    if command == "view":
        return _view(args, path, text, prefix)
    if command in ("insert", "undo_edit"):
        return arg_failure(
            f"str_replace_editor {command}",
            "Pi has no line-number insert or undo",
            "express it as an edit with the surrounding text as oldText",
        )
    return arg_failure("str_replace_editor", f"unknown command {command!r}", "use view/create/str_replace")


def _swe_success(command: str, text: str) -> bool:
    marker = {"create": "File created successfully at", "str_replace": "has been edited"}[command]
    return marker in text


class SweAgentMapping:
    """Maps SWE-agent function-calling tool calls to Pi (see the module table)."""

    def map_call(self, call: ToolCall, result: Step | None, ctx: MapContext) -> MapOutcome:
        name = call.name
        if name == "submit":
            return Drop("swe_agent.submit:end-of-episode", ends_episode=True)
        args = parse_arguments(call.arguments, name or "<unnamed>")
        if isinstance(args, Failure):
            return args
        if name == "str_replace_editor":
            return map_str_replace_editor(
                args,
                result,
                "swe_agent",
                _swe_success,
                ctx.card,
            )
        if name == "create":
            path = args.get("filename")
            if not isinstance(path, str) or not path:
                return arg_failure("create", "filename is missing", "give the file name")
            # SWE-agent's create writes one newline and opens the file: the viewer shows "(1 lines total)" and an
            # empty line 1. Any other observation (file exists, error) is not a fresh empty file: reject.
            text = None if result is None else strip_swe_prompt(result.text or "").replace("\r\n", "\n")
            out: str | Failure | None = None if text is None else pi_write_result(ctx.card, path, "\n")
            if text is not None and not re.fullmatch(r"\[File: [^\n]*\(1 lines total\)\]\n1:\s*", text):
                out = _result_failure("create", text)
            return PiCall("write", {"path": path, "content": "\n"}, out, ("swe_agent.create->write",))
        if name == "bash":
            command = args.get("command")
            if not isinstance(command, str) or not command.strip():
                return arg_failure("bash", "command is missing or empty", "give the command string")
            out = (
                None
                if result is None
                else result_failure(
                    "bash",
                    "SWE-agent does not record the exit status, which decides Pi's text",
                    "re-run the command under Pi (or a runner that records exit codes)",
                )
            )
            return PiCall("bash", {"command": command}, out, ("swe_agent.bash->bash",))
        if name in VIEWER_STATE:
            return arg_failure(
                name,
                "acts on SWE-agent's open file and cursor (viewer state, not arguments)",
                "rewrite as a Pi edit/read naming the file and the exact text",
            )
        return unsupported(name or "<unnamed>", "SWE-agent command with no Pi equivalent")
