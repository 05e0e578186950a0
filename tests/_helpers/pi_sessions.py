"""Pi session files written by the tests (v3 layout: a header line, then entries with ``id``/``parentId``), from the
facts the Pi card and ``formats/pi/reader.py`` document; the real sessions are read from traces_dir elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


class Session:
    """Entries appended in order; each names its parent (default: the previous entry), so trees are easy to write."""

    def __init__(self, cwd: str = "/work/app") -> None:
        self.header = {"type": "session", "version": 3, "id": "s-test", "timestamp": "2026-11-30T10:00:00.000Z",
                       "cwd": cwd}
        self.entries: list[dict[str, Any]] = []

    def add(self, message: dict[str, Any], parent: str | None | bool = True) -> str:
        eid = f"e{len(self.entries)}"
        if parent is True:
            parent = self.entries[-1]["id"] if self.entries else None
        self.entries.append({"type": "message", "id": eid, "parentId": parent,
                             "timestamp": "2026-11-30T10:00:01.000Z", "message": message})
        return eid

    def user(self, text: str, parent: str | None | bool = True) -> str:
        return self.add({"role": "user", "content": [{"type": "text", "text": text}]}, parent)

    def call(self, call_id: str, name: str, arguments: Any, *, raw: str | None = None, text: str = "",
             parent: str | None | bool = True) -> str:
        """An assistant turn with one tool call; ``raw``: arguments Pi could not parse (stored as ``argumentsError``)."""
        block: dict[str, Any] = {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
        if raw is not None:
            block["arguments"] = {}
            block["argumentsError"] = "Tool arguments must be a JSON object\n\nReceived arguments:\n" + raw
        content = ([{"type": "text", "text": text}] if text else []) + [block]
        return self.add({"role": "assistant", "content": content, "stopReason": "toolUse"}, parent)

    def result(self, call_id: str, name: str, text: str, *, error: bool = False, parent: str | None | bool = True) -> str:
        return self.add({"role": "toolResult", "toolCallId": call_id, "toolName": name, "isError": error,
                         "content": [{"type": "text", "text": text}]}, parent)

    def answer(self, text: str, parent: str | None | bool = True) -> str:
        return self.add({"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"},
                        parent)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\n".join(orjson.dumps(r) for r in [self.header, *self.entries]) + b"\n")
        return path


def branchy_session(branches: int, cwd: str = "/work/app") -> Session:
    """A session a user kept regenerating: ``branches`` turns on the active branch, and at each one an answer the
    user threw away (a side branch one entry long, forking off the active branch at that turn's prompt). The last
    entry is the active leaf, as Pi writes it, so every side leaf's root→leaf path is as long as the turn it forks at."""
    s = Session(cwd)
    prev: str | None = None
    for i in range(branches):
        u = s.user(f"step {i}: make the change and run the tests", parent=prev)
        s.answer(f"draft {i} (discarded)", parent=u)
        prev = s.answer(f"step {i} done: the tests pass", parent=u)
    return s
