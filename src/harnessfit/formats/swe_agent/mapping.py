"""SWE-agent tool calls → Pi calls. SWE-agent's result texts are its own, so results are re-rendered into Pi's
wording only where the observation proves what Pi would have said; otherwise the trajectory is rejected.

==============================================  ==================================================================
SWE-agent                                       Pi
==============================================  ==================================================================
``str_replace_editor create``                   ``write{path, content: file_text}`` ("File created successfully")
``str_replace_editor str_replace``              ``edit{path, edits:[{oldText: old_str, newText: new_str}]}``
                                                ("has been edited")
``create{filename}``                            ``write{path, content: ""}`` (new empty file shown as "[File: …]")
``submit``                                      dropped with its result (ends the episode; Pi just stops)
``str_replace_editor view``                     rejected: the ``cat -n`` rendering expands tabs and hides whether the
                                                file ends with a newline, so Pi's read text cannot be rebuilt
``insert``, ``undo_edit``, ``open``, ``goto``,  rejected ``unmappable_arguments``: they act on the viewer's open
``scroll_*``, ``edit{search, replace}``         file and cursor (state, not arguments)
``bash``                                        rejected: SWE-agent runs commands with ``check="ignore"`` and never
                                                records the exit status, which decides Pi's text
``find_file``, ``search_*``, others             ``unsupported_tool``
==============================================  ==================================================================

Failed editor operations (SWE-agent's error texts) are rejected too: Pi words its errors differently.
"""

from __future__ import annotations

import re
from collections.abc import Callable
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
from harnessfit.harness.card import HarnessCard
from harnessfit.harness.pi_results import pi_edit_result, pi_write_result

__all__ = ["SweAgentMapping", "map_str_replace_editor", "strip_swe_prompt"]

_PROMPT_TRAILER = re.compile(r"\n?\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)\n?bash-\$\s*\Z")
VIEWER_STATE = frozenset({"insert", "open", "goto", "scroll_up", "scroll_down", "edit"})


def strip_swe_prompt(text: str) -> str:
    """Remove SWE-agent's ``(Open file: …)(Current directory: …) bash-$`` prompt from an observation."""
    return _PROMPT_TRAILER.sub("", text)


def _result_failure(tool: str, text: str) -> Failure:
    return Failure(
        Reason.unmappable_arguments, f"{tool} result is not a success Pi could word exactly ({excerpt(text, 80)!r})",
        "drop the failed step or re-run the task under Pi so the error text is Pi's own",
    )


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
    if text is not None and result is not None and result.is_error:
        return _result_failure(f"str_replace_editor {command}", text)
    if command == "create":
        content = args.get("file_text")
        if not isinstance(content, str):
            return arg_failure("str_replace_editor", "create without file_text", "give the file text")
        if text is not None and not success("create", text):
            return _result_failure("str_replace_editor create", text)
        out = None if text is None else pi_write_result(card, path, content)
        return PiCall("write", {"path": path, "content": content}, out, (f"{prefix}.str_replace_editor.create->write",))
    if command == "str_replace":
        old, new = args.get("old_str"), args.get("new_str", "")
        if not isinstance(old, str) or not old:
            return arg_failure("str_replace_editor", "str_replace without old_str", "give the text to replace")
        if new is None:
            new = ""
        if not isinstance(new, str):
            return arg_failure("str_replace_editor", "new_str is not a string", "new_str must be text")
        if text is not None and not success("str_replace", text):
            return _result_failure("str_replace_editor str_replace", text)
        out = None if text is None else pi_edit_result(card, path, 1)
        return PiCall(
            "edit", {"path": path, "edits": [{"oldText": old, "newText": new}]}, out,
            (f"{prefix}.str_replace_editor.str_replace->edit",),
        )
    if command == "view":
        return arg_failure(
            "str_replace_editor view",
            "the cat -n rendering expands tabs and hides the final newline, so Pi's read text cannot be rebuilt",
            "re-run the read under Pi, or record the raw file content",
        )
    if command in ("insert", "undo_edit"):
        return arg_failure(
            f"str_replace_editor {command}", "Pi has no line-number insert or undo",
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
            return Drop("swe_agent.submit:end-of-episode")
        args = parse_arguments(call.arguments, name or "<unnamed>")
        if isinstance(args, Failure):
            return args
        if name == "str_replace_editor":
            return map_str_replace_editor(
                args, result, "swe_agent",
                _swe_success, ctx.card,
            )
        if name == "create":
            path = args.get("filename")
            if not isinstance(path, str) or not path:
                return arg_failure("create", "filename is missing", "give the file name")
            # SWE-agent's create writes one newline and opens the file: the viewer shows "(1 lines total)" and an
            # empty line 1. Any other observation (file exists, error) is not a fresh empty file: reject.
            text = None if result is None else strip_swe_prompt(result.text or "").replace("\r\n", "\n")
            if text is not None and not re.fullmatch(r"\[File: [^\n]*\(1 lines total\)\]\n1:\s*", text):
                return _result_failure("create", text)
            out = None if text is None else pi_write_result(ctx.card, path, "\n")
            return PiCall("write", {"path": path, "content": "\n"}, out, ("swe_agent.create->write",))
        if name == "bash":
            return Failure(
                Reason.unmappable_arguments,
                "bash result: SWE-agent does not record the exit status, which decides Pi's text",
                "re-run the command under Pi (or a runner that records exit codes)",
            )
        if name in VIEWER_STATE:
            return arg_failure(
                name, "acts on SWE-agent's open file and cursor (viewer state, not arguments)",
                "rewrite as a Pi edit/read naming the file and the exact text",
            )
        return unsupported(name or "<unnamed>", "SWE-agent command with no Pi equivalent")
