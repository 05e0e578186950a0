"""Helpers: small Pi-wire conversations written for these tests (real traces are read from traces_dir where needed)."""

from __future__ import annotations

from typing import Any

import orjson

from harnessfit.core.conversation import Conversation, ConversationMeta
from harnessfit.core.ids import content_id, root_request_id

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": n,
            "description": f"{n} tool",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
    for n in ("read", "bash", "edit")
]


def make_conv(
    prompt: str,
    steps: list[tuple[str, dict[str, Any], str]],
    *,
    answer: str = "Done.",
    repository: str | None = "acme/app",
    cwd: str = "/work/app",
    source: str = "pi",
    salt: str = "",
) -> Conversation:
    """A conversation: system, user prompt, then (tool name, arguments, tool result) steps, then a final answer."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": f"You are a coding agent.\nCurrent working directory: {cwd}"},
        {"role": "user", "content": [{"type": "text", "text": prompt}]},
    ]
    for i, (name, args, result) in enumerate(steps):
        cid = f"call_{i}{salt}"
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": orjson.dumps(args).decode()},
                    }
                ],
            }
        )
        msgs.append({"role": "tool", "content": result, "tool_call_id": cid})
    msgs.append({"role": "assistant", "content": answer})
    cid = content_id("test", prompt, salt, orjson.dumps(msgs).decode())
    meta = ConversationMeta(
        source=source,
        file=f"{source}/test.jsonl",
        sha256="0" * 64,
        line_start=1,
        line_end=len(msgs),
        root_request_id=root_request_id(prompt, repository),
        repository=repository,
        card="pi-0.73.1",
        cwd=cwd,
        date="2025-01-01",
    )
    return Conversation(id=cid, messages=msgs, tools=TOOLS, meta=meta)


def corpus(n: int) -> list[Conversation]:
    """n distinct conversations over n // 2 root requests (two runs per request)."""
    out = []
    for i in range(n):
        prompt = f"Fix bug number {i // 2} in module m{i // 2}.py and run the tests"
        steps = [
            ("read", {"path": f"m{i // 2}.py"}, f"def f{i}():\n    return {i} * {i} + {i // 2}\n" * 3),
            ("bash", {"command": f"pytest -q tests/test_m{i}.py --seed {i}"}, f"{i} passed in 0.{i}s"),
        ]
        out.append(
            make_conv(
                prompt, steps, answer=f"Fixed m{i // 2} variant {i}: changed the return value to {i * 7}.", salt=str(i)
            )
        )
    return out
