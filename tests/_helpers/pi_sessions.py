"""Pi session files written by the tests, from the facts the Pi cards and ``formats/pi/reader.py`` document (the
real sessions are read from traces_dir elsewhere):

- ``Session``: a v3 tree (a header line, then entries with ``id``/``parentId``) built entry by entry, e.g.
  ``branchy_session`` for a session a user kept regenerating;
- ``write_session``: a session in the layout and wording of a committed card (``card.session``, its result texts),
  what each version's CLI writes, without running it, for tests of reading and converting across versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from harnessfit.harness.card import HarnessCard, load_card

__all__ = [
    "Session",
    "branchy_session",
    "Call",
    "CWD",
    "DATE",
    "keeps_system",
    "write_session",
    "ordinary_calls",
    "message_entry",
    "assistant_message",
    "tool_result",
    "write_rows",
]


def message_entry(eid: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    """A v3 ``message`` entry holding ``message``."""
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": "2026-11-01T10:00:00Z", "message": message}


def assistant_message(blocks: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {"role": "assistant", "content": blocks, "stopReason": stop, "model": "m", "provider": "p"}


def tool_result(cid: str, name: str, text: str, err: bool = False) -> dict[str, Any]:
    content = [{"type": "text", "text": text}]
    return {"role": "toolResult", "toolCallId": cid, "toolName": name, "content": content, "isError": err}


def write_rows(path: Path, rows: list[dict[str, Any]], *, reverse_keys: bool = False, newline: str = "\n") -> Path:
    """One JSON line per row; ``reverse_keys``: every object's keys in reverse order (Pi reads entries by key)."""
    if reverse_keys:
        rows = [_reversed(r) for r in rows]
    path.write_bytes("".join(orjson.dumps(r).decode() + newline for r in rows).encode())
    return path


def _reversed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reversed(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_reversed(v) for v in value]
    return value


class Session:
    """Entries appended in order; each names its parent (default: the previous entry), so trees are easy to write."""

    def __init__(self, cwd: str = "/work/app") -> None:
        self.header = {
            "type": "session",
            "version": 3,
            "id": "s-test",
            "timestamp": "2026-11-30T10:00:00.000Z",
            "cwd": cwd,
        }
        self.entries: list[dict[str, Any]] = []

    def add(self, message: dict[str, Any], parent: str | bool | None = True) -> str:
        eid = f"e{len(self.entries)}"
        if parent is True:
            parent = self.entries[-1]["id"] if self.entries else None
        self.entries.append(
            {
                "type": "message",
                "id": eid,
                "parentId": parent,
                "timestamp": "2026-11-30T10:00:01.000Z",
                "message": message,
            }
        )
        return eid

    def user(self, text: str, parent: str | bool | None = True) -> str:
        return self.add({"role": "user", "content": [{"type": "text", "text": text}]}, parent)

    def call(
        self,
        call_id: str,
        name: str,
        arguments: Any,
        *,
        raw: str | None = None,
        text: str = "",
        parent: str | bool | None = True,
    ) -> str:
        """An assistant turn with one tool call; ``raw``: arguments Pi could not parse (stored as ``argumentsError``)."""
        block: dict[str, Any] = {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
        if raw is not None:
            block["arguments"] = {}
            block["argumentsError"] = "Tool arguments must be a JSON object\n\nReceived arguments:\n" + raw
        content = ([{"type": "text", "text": text}] if text else []) + [block]
        return self.add({"role": "assistant", "content": content, "stopReason": "toolUse"}, parent)

    def result(
        self, call_id: str, name: str, text: str, *, error: bool = False, parent: str | bool | None = True
    ) -> str:
        return self.add(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": name,
                "isError": error,
                "content": [{"type": "text", "text": text}],
            },
            parent,
        )

    def answer(self, text: str, parent: str | bool | None = True) -> str:
        return self.add(
            {"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"}, parent
        )

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


CWD, DATE = "/work/project", "2026-05-01"
Call = tuple[str, dict[str, Any], str]


def keeps_system(card: HarnessCard) -> bool:
    return "system" in card.session["message_roles"]


def write_session(path: Path, version: str, calls: list[Call], *, prompt_suffix: str = "") -> Path:
    """A session in the layout Pi ``version`` writes (its card's ``session`` section): a 1.x one opens with the
    ``system`` message holding the prompt and the tools' parameters."""
    card = load_card("pi", version)
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": card.session["version"],
            "id": "s1",
            "timestamp": f"{DATE}T10:00:00.000Z",
            "cwd": CWD,
        }
    ]

    def add(message: dict[str, Any]) -> None:
        n = len(lines)
        lines.append(
            {
                "type": "message",
                "id": f"e{n}",
                "parentId": f"e{n - 1}" if n > 1 else None,
                "timestamp": f"{DATE}T10:00:{n:02d}.000Z",
                "message": message,
            }
        )

    if keeps_system(card):
        tools = [
            {
                "name": t["function"]["name"],
                "description": t["function"]["description"],
                "parameters": t["function"]["parameters"],
            }
            for t in card.tools
        ]
        add(
            {
                "role": "system",
                "content": [{"type": "text", "text": card.render_system_prompt(CWD, DATE) + prompt_suffix}],
                "toolsAdded": tools,
                "timestamp": 0,
            }
        )
    add({"role": "user", "content": [{"type": "text", "text": "Fix the config."}], "timestamp": 1})
    for i, (name, arguments, result) in enumerate(calls):
        add(
            {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": f"call_{i}", "name": name, "arguments": arguments}],
                "stopReason": "toolUse",
                "timestamp": 2,
            }
        )
        add(
            {
                "role": "toolResult",
                "toolCallId": f"call_{i}",
                "toolName": name,
                "content": [{"type": "text", "text": result}],
                "isError": False,
                "timestamp": 3,
            }
        )
    add({"role": "assistant", "content": [{"type": "text", "text": "Done."}], "stopReason": "stop", "timestamp": 4})
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def ordinary_calls(version: str) -> list[Call]:
    """A read, a failing bash, an edit and a write, answered in Pi ``version``'s own words."""
    card = load_card("pi", version)
    return [
        ("read", {"path": "a.txt"}, card.format_result("read", content="one\ntwo\n")),
        ("bash", {"command": "ls; exit 2"}, card.format_result("bash_exit_code", output="a.txt", code=2)),
        (
            "edit",
            {"path": "a.txt", "edits": [{"oldText": "one", "newText": "1"}]},
            card.format_result("edit", count=1, path="a.txt"),
        ),
        ("write", {"path": "b.txt", "content": "hi\n"}, card.format_result("write", bytes=3, path="b.txt")),
    ]
