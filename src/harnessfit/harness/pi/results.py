"""The one renderer of Pi tool-result texts: every mapping (and the Pi reader) words results through these functions.

Why one place: a model learns the result texts it sees, so each must be a text Pi itself could have produced. All
wording comes from the committed harness card (``card.format_result``; a missing key is a bug and raises). What the
card cannot express — Pi's output limits — is checked here too: Pi cuts a bash output over 2000 lines or 50 KB to its
tail and names a random temp file, and cuts a read over those limits with a continuation note; a source result of
that size cannot be re-rendered exactly, so the renderer returns a ``Failure`` (``unmappable_result``, detail
"<tool> result: …"); the mapping puts it in place of the result (``PiCall.result``): the call can still be a training
label, the context after it cannot.

Facts from Pi 0.73.1's own tools (``core/tools/{read,bash,edit,write,truncate}.js``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessfit.core.rejection import Failure, Reason

if TYPE_CHECKING:  # the card module pulls in jsonschema; readers that only need bash_user_text should not
    from harnessfit.harness.card import HarnessCard

__all__ = [
    "NO_OUTPUT",
    "PI_MAX_LINES",
    "PI_MAX_BYTES",
    "js_length",
    "over_pi_limits",
    "pi_bash_result",
    "pi_read_result",
    "pi_edit_result",
    "pi_write_result",
    "pi_file_not_found",
    "pi_edit_no_match",
    "pi_grep_result",
    "PI_GREP_LIMIT",
    "PI_GREP_MAX_LINE",
    "bash_user_text",
]

NO_OUTPUT = "(no output)"
PI_MAX_LINES = 2000
PI_MAX_BYTES = 50 * 1024
PI_GREP_LIMIT = 100  # grep's default match limit (core/tools/grep.js DEFAULT_LIMIT)
PI_GREP_MAX_LINE = 500  # grep cuts a longer match line (truncate.js GREP_MAX_LINE_LENGTH)


def js_length(text: str) -> int:
    """``String.prototype.length``: UTF-16 code units (what Pi's write tool reports as "bytes")."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def over_pi_limits(text: str) -> str | None:
    """Why Pi would truncate ``text`` (its lines are ``split("\\n")``, its size UTF-8 bytes), or ``None``."""
    lines = text.count("\n") + 1
    size = len(text.encode("utf-8"))
    if lines <= PI_MAX_LINES and size <= PI_MAX_BYTES:
        return None
    return f"{lines} lines, {size} bytes: over Pi's limits ({PI_MAX_LINES} lines / {PI_MAX_BYTES // 1024} KB)"


def pi_bash_result(card: HarnessCard, output: str, exit_code: int | None, tool: str = "bash") -> str | Failure:
    """Pi's bash text: the merged output or ``(no output)``, then the exit status when non-zero; a ``Failure`` when
    Pi would have truncated the output (its note names a random temp file, which no source can give)."""
    why = over_pi_limits(output)
    if why is not None:
        return Failure(
            Reason.unmappable_result,
            f"{tool} result: output {why}; Pi would keep the tail and name a random temp file",
            "trim the command's output (head/tail) so it fits 2000 lines / 50 KB, or re-run under Pi",
        )
    if exit_code not in (0, None):
        return card.format_result("bash_exit_code", output=output or NO_OUTPUT, code=exit_code)
    if not output:
        return card.format_result("bash_no_output")
    return card.format_result("bash", output=output)


def pi_read_result(
    card: HarnessCard,
    content: str,
    *,
    start: int,
    total: int | None,
    limited: bool,
    shown: int | None = None,
    tool: str = "read",
) -> str | Failure:
    """Pi's read text for ``content`` shown from line ``start`` of a file of ``total`` lines (``None``: unknown);
    ``shown`` lines (default: counted in ``content``).

    ``limited``: the call had a ``limit``. When it stopped before the end, Pi adds ``[N more lines in file…]``.
    Content that Pi's own 2000-line / 50 KB cap would cut is a ``Failure``: the source's file view is not Pi's."""
    why = over_pi_limits(content)
    if why is not None:
        return Failure(
            Reason.unmappable_result,
            f"{tool} result: content {why}; Pi would cut it and add its own note",
            "read the file in parts (offset/limit) that fit Pi's limits, or re-run under Pi",
        )
    if shown is None:
        shown = content.count("\n") + 1
    end = start - 1 + shown
    if limited and total is not None and end < total:
        return card.format_result("read_more_lines", content=content, remaining=total - end, next_offset=end + 1)
    return card.format_result("read", content=content)


def pi_edit_result(card: HarnessCard, path: str, n_edits: int) -> str:
    """``Successfully replaced N block(s) in PATH.`` (the path as the call gave it)."""
    return card.format_result("edit", count=n_edits, path=path)


def pi_write_result(card: HarnessCard, path: str, content: str) -> str:
    """Pi counts ``content.length`` (UTF-16 code units), not UTF-8 bytes."""
    return card.format_result("write", bytes=js_length(content), path=path)


def pi_file_not_found(card: HarnessCard, abs_path: str) -> str:
    return card.format_result("file_not_found", abs_path=abs_path)


def pi_edit_no_match(card: HarnessCard, path: str) -> str:
    return card.format_result("edit_no_match", path=path)


def pi_grep_result(
    card: HarnessCard, matches: list[tuple[str, int, str]], limit: int | None = None, tool: str = "grep"
) -> str | Failure:
    """Pi's grep text for ``matches`` (path as Pi shows it, line number, line text) in the order rg found them
    (``core/tools/grep.js``, context 0): one ``path:N: text`` line per match, at most ``limit`` (default 100) of them
    and then its "matches limit reached" note, or ``No matches found``; a match line over 500 characters (Pi cuts it
    and adds a note) or an output over 50 KB (Pi cuts it) is an ``unmappable_result`` ``Failure`` rather than
    re-rendered. The templates
    are the tools profile's card (``grep_match``, ``grep_match_limit``, ``grep_no_matches``)."""
    if not matches:
        return card.format_result("grep_no_matches")
    effective = max(1, limit if limit is not None else PI_GREP_LIMIT)
    shown = matches[:effective]
    longest = max(js_length(text) for _, _, text in shown)
    if longest > PI_GREP_MAX_LINE:
        return Failure(
            Reason.unmappable_result,
            f"{tool} result: a match line of {longest} characters; Pi cuts "
            f"lines at {PI_GREP_MAX_LINE} and adds its own note",
            "search for a pattern on shorter lines, or re-run under Pi",
        )
    output = "\n".join(card.format_result("grep_match", path=p, line=n, text=t) for p, n, t in shown)
    if len(output.encode("utf-8")) > PI_MAX_BYTES:
        return Failure(
            Reason.unmappable_result,
            f"{tool} result: over Pi's 50 KB output cap (Pi cuts it)",
            "narrow the search, or re-run under Pi",
        )
    if len(matches) >= effective:  # Pi stops rg at the limit and says so, even when exactly that many exist
        return card.format_result("grep_match_limit", output=output, limit=effective, more=effective * 2)
    return output


def bash_user_text(
    command: str, output: str, exit_code: int | None, cancelled: bool = False, *, full_output_path: str | None = None
) -> str:
    """The user message Pi sends for a user's ``!cmd`` (``bashExecutionToText`` in ``core/messages.js``, the same in
    every captured version; not a tool result, so not in the card). ``full_output_path``: the file Pi saved a
    truncated output to (set only when the execution was ``truncated``)."""
    text = f"Ran `{command}`\n"
    text += f"```\n{output}\n```" if output else NO_OUTPUT
    if cancelled:
        text += "\n\n(command cancelled)"
    elif exit_code not in (None, 0):
        text += f"\n\nCommand exited with code {exit_code}"
    if full_output_path:
        text += f"\n\n[Output truncated. Full output: {full_output_path}]"
    return text
