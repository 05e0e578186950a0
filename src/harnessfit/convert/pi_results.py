"""Pi's tool-result wording, so converted results read exactly as Pi 0.73.1's tools would have returned them.

Facts from Pi's own tool code (``core/tools/{read,bash,edit,write}.js``) and ``pi-harness.md``; when the harness
card carries a result template for a key (``card.format_result``), the card wins.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "NO_OUTPUT",
    "bash_result",
    "bash_user_text",
    "read_result",
    "edit_result",
    "write_result",
    "js_length",
    "card_text",
]

NO_OUTPUT = "(no output)"


def card_text(card: Any, key: str, fallback: str, **values: Any) -> str:
    """``card.format_result(key, **values)`` when the card knows ``key``; otherwise the measured ``fallback``."""
    fmt = getattr(card, "format_result", None)
    if fmt is None:
        return fallback
    try:
        text = fmt(key, **values)
    except Exception:  # unknown key or missing value in this card version: keep the measured text
        return fallback
    return text if isinstance(text, str) else fallback


def js_length(text: str) -> int:
    """``String.prototype.length``: UTF-16 code units (what Pi's write tool reports as "bytes")."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def bash_result(output: str, exit_code: int | None) -> str:
    """Pi's bash text: merged stdout+stderr, ``(no output)`` when empty, and on a non-zero exit the status line
    ``Command exited with code N`` after a blank line."""
    text = output if output else NO_OUTPUT
    if exit_code not in (None, 0):
        text = f"{text}\n\nCommand exited with code {exit_code}"
    return text


def bash_user_text(command: str, output: str, exit_code: int | None, cancelled: bool = False) -> str:
    """The user message Pi sends for a user's ``!cmd`` (``bashExecutionToText``)."""
    text = f"Ran `{command}`\n"
    text += f"```\n{output}\n```" if output else NO_OUTPUT
    if cancelled:
        text += "\n\n(command cancelled)"
    elif exit_code not in (None, 0):
        text += f"\n\nCommand exited with code {exit_code}"
    return text


def read_result(content: str, *, start_line: int = 1, shown_lines: int | None = None, total_lines: int | None = None,
                user_limited: bool = False) -> str:
    """Pi's read text: the file lines without numbers; when a user ``limit`` stopped before the end of the file,
    the note ``[N more lines in file. Use offset=K to continue.]``."""
    if user_limited and total_lines is not None and shown_lines is not None:
        end = start_line - 1 + shown_lines
        if end < total_lines:
            return f"{content}\n\n[{total_lines - end} more lines in file. Use offset={end + 1} to continue.]"
    return content


def edit_result(path: str, blocks: int) -> str:
    return f"Successfully replaced {blocks} block(s) in {path}."


def write_result(path: str, content: str) -> str:
    return f"Successfully wrote {js_length(content)} bytes to {path}"
