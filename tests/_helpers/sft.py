"""Small SFT datasets written by the tests themselves (Pi wire form: arguments as compact JSON text)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessfit.core import jsonio

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            "strict": False,
        },
    },
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            "strict": False,
        },
    },
]
SYSTEM = "You are an expert coding assistant operating inside pi, a coding agent harness."


def call(cid: str, name: str, args_text: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args_text}}


def record(rid: str, messages: list[dict], action: dict, *, split: str = "train", group: str = "g1") -> dict:
    return {
        "id": rid,
        "conversation_id": "conv-" + group,
        "split": split,
        "action_index": 0,
        "messages": messages,
        "tools": TOOLS,
        "action": action,
        "source": "pi",
        "group": group,
    }


def conversation_records(n_turns: int, *, split: str = "train", group: str = "g1") -> list[dict]:
    """One conversation of tool round trips, cut into one record per assistant action."""
    msgs: list[dict] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": [{"type": "text", "text": f"Fix the bug in {group}."}]},
    ]
    out = []
    for i in range(n_turns):
        act = {
            "role": "assistant",
            "content": None if i % 2 else f"Step {i}: reading.",
            "tool_calls": [call(f"{group}-{i}", "read", f'{{"path":"src/f{i}.py"}}')],
        }
        out.append(record(f"{group}-{i:03d}", list(msgs), act, split=split, group=group))
        msgs += [act, {"role": "tool", "content": f"def f{i}():\n    return {i}\n", "tool_call_id": f"{group}-{i}"}]
    final = {"role": "assistant", "content": "Done: the bug is fixed."}
    out.append(record(f"{group}-{n_turns:03d}", list(msgs), final, split=split, group=group))
    return out


def write_dataset(root: Path, splits: dict[str, list[dict]], extra_lines: dict[str, list[bytes]] | None = None) -> Path:
    sft = root / "sft"
    sft.mkdir(parents=True, exist_ok=True)
    for split, rows in splits.items():
        path = sft / f"{split}.jsonl"
        jsonio.write_jsonl(path, rows)
        for line in (extra_lines or {}).get(split, []):
            with path.open("ab") as fh:
                fh.write(line + b"\n")
    return root
