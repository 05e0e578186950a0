"""Pi session files written in the layout and wording of a committed card (``card.session``, its result texts):
what each version's CLI writes, without running it, for tests of reading and converting across versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from harnessfit.harness.card import HarnessCard, load_card

__all__ = ["Call", "CWD", "DATE", "keeps_system", "write_session", "ordinary_calls"]

CWD, DATE = "/work/project", "2026-05-01"
Call = tuple[str, dict[str, Any], str]


def keeps_system(card: HarnessCard) -> bool:
    return "system" in card.session["message_roles"]


def write_session(path: Path, version: str, calls: list[Call], *, prompt_suffix: str = "") -> Path:
    """A session in the layout Pi ``version`` writes (its card's ``session`` section): a 1.x one opens with the
    ``system`` message holding the prompt and the tools' parameters."""
    card = load_card("pi", version)
    lines: list[dict[str, Any]] = [{"type": "session", "version": card.session["version"], "id": "s1",
                                    "timestamp": f"{DATE}T10:00:00.000Z", "cwd": CWD}]

    def add(message: dict[str, Any]) -> None:
        n = len(lines)
        lines.append({"type": "message", "id": f"e{n}", "parentId": f"e{n - 1}" if n > 1 else None,
                      "timestamp": f"{DATE}T10:00:{n:02d}.000Z", "message": message})

    if keeps_system(card):
        tools = [{"name": t["function"]["name"], "description": t["function"]["description"],
                  "parameters": t["function"]["parameters"]} for t in card.tools]
        add({"role": "system", "content": [{"type": "text", "text": card.render_system_prompt(CWD, DATE) + prompt_suffix}],
             "toolsAdded": tools, "timestamp": 0})
    add({"role": "user", "content": [{"type": "text", "text": "Fix the config."}], "timestamp": 1})
    for i, (name, arguments, result) in enumerate(calls):
        add({"role": "assistant", "content": [{"type": "toolCall", "id": f"call_{i}", "name": name,
                                               "arguments": arguments}], "stopReason": "toolUse", "timestamp": 2})
        add({"role": "toolResult", "toolCallId": f"call_{i}", "toolName": name,
             "content": [{"type": "text", "text": result}], "isError": False, "timestamp": 3})
    add({"role": "assistant", "content": [{"type": "text", "text": "Done."}], "stopReason": "stop", "timestamp": 4})
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    return path


def ordinary_calls(version: str) -> list[Call]:
    """A read, a failing bash, an edit and a write, answered in Pi ``version``'s own words."""
    card = load_card("pi", version)
    return [
        ("read", {"path": "a.txt"}, card.format_result("read", content="one\ntwo\n")),
        ("bash", {"command": "ls; exit 2"}, card.format_result("bash_exit_code", output="a.txt", code=2)),
        ("edit", {"path": "a.txt", "edits": [{"oldText": "one", "newText": "1"}]},
         card.format_result("edit", count=1, path="a.txt")),
        ("write", {"path": "b.txt", "content": "hi\n"}, card.format_result("write", bytes=3, path="b.txt")),
    ]


