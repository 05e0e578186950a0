"""Claude Code steps whose results map to Pi's text exactly, for tests that need an exact action of a Claude session
(a ``Bash`` result never is: Claude Code trims a command's output, see ``formats.claude_code.mapping``)."""

from __future__ import annotations

from harnessfit.core import Step, ToolCall

__all__ = ["read_record", "read_steps"]


def read_record(path: str, content: str) -> dict:
    """The ``toolUseResult`` Claude Code writes for a Read of the whole file ``path``: its ``content`` is Pi's read
    text."""
    n = len(content.split("\n"))
    return {
        "type": "text",
        "file": {"filePath": path, "content": content, "numLines": n, "startLine": 1, "totalLines": n},
    }


def read_steps(cid: str, path: str, content: str, text: str | None = None) -> list[Step]:
    """An assistant turn (with ``text``) reading the whole file ``path`` and its result: Claude Code's numbered view
    plus its ``read_record``."""
    numbered = "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(content.split("\n"), 1))
    record = read_record(path, content)
    return [
        Step(role="assistant", text=text, tool_calls=[ToolCall(id=cid, name="Read", arguments={"file_path": path})]),
        Step(role="tool", tool_call_id=cid, text=numbered, meta={"toolUseResult": record}),
    ]
