"""One eval episode as a page: the task, every message and tool call in order with its result, the checker's output,
why it failed, the caps it hit, tokens and time — read from the episode's own files (session file, else the event
stream), the way the scorers read them.

Tool-call arguments are shown as the model sent them (``Harness.sent_arguments``): the harness parses the wire text
once and stores the value (Pi does), so the wire text is its compact JSON again (the scorers re-create it the same
way). A stored *string* therefore means the model sent a JSON string — double encoding — and it is shown with its
quotes and backslashes. The episode is read back through the harness that ran it (``Harness.transcript``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from harnessfit.core.jsonio import dumps_compact_str
from harnessfit.eval.episode import Episode
from harnessfit.eval.task import load_task
from harnessfit.harness.base import Harness, get_harness

__all__ = ["MAX_TEXT", "episode_view", "tool_call_view"]

MAX_TEXT = 20_000  # characters of one text block shown on the page; the rest stays in the session file


def _clip(text: str) -> tuple[str, int]:
    """(shown text, characters left out)."""
    return (text, 0) if len(text) <= MAX_TEXT else (text[:MAX_TEXT], len(text) - MAX_TEXT)


def _double_encoded_inner(arguments: Any) -> dict | None:
    if not isinstance(arguments, str):
        return None
    try:
        inner = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return None
    return inner if isinstance(inner, dict) else None


def tool_call_view(part: dict[str, Any], card: Any = None, harness: Harness | None = None) -> dict[str, Any]:
    """A tool call as shown: ``raw`` (the wire text), whether it is double-encoded, the card validator's findings,
    and a readable form of each argument (strings with their real newlines)."""
    args = (harness or get_harness()).sent_arguments(part)
    raw = dumps_compact_str(args)
    inner = _double_encoded_inner(args)
    shown = inner if inner is not None else args
    readable = (
        [(str(k), v if isinstance(v, str) else dumps_compact_str(v)) for k, v in shown.items()]
        if isinstance(shown, dict)
        else []
    )
    findings: list[tuple[str, str, str]] = []
    if card is not None:
        try:
            findings = [
                (str(getattr(v, "code", v)), str(getattr(v, "severity", "error")), str(getattr(v, "detail", "")))
                for v in card.validate_call(str(part.get("name")), raw)
            ]
        except Exception:  # noqa: BLE001 - a validator crash leaves the call shown without findings
            findings = []
    raw_shown, raw_cut = _clip(raw)
    return {
        "id": part.get("id"),
        "name": part.get("name"),
        "raw": raw_shown,
        "raw_cut": raw_cut,
        "double_encoded": inner is not None,
        "readable": [(k, *_clip(v)) for k, v in readable],
        "findings": findings,
    }


def _parts_text(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [p for p in content or [] if isinstance(p, dict)]


def _items(messages: list[dict[str, Any]], card: Any, harness: Harness | None = None) -> list[dict[str, Any]]:
    harness = harness or get_harness()
    t0 = next((m["timestamp"] for m in messages if isinstance(m.get("timestamp"), (int, float))), None)
    items: list[dict[str, Any]] = []
    turn = 0
    for m in messages:
        role = m.get("role")
        ts = m.get("timestamp")
        at = round((ts - t0) / 1000, 2) if t0 is not None and isinstance(ts, (int, float)) else None
        item: dict[str, Any] = {
            "role": role,
            "at": at,
            "blocks": [],
            "turn": None,
            "stop_reason": None,
            "error": None,
            "usage": {},
            "model": None,
            "tool": None,
            "call_id": None,
            "is_error": False,
        }
        if role == "assistant":
            turn += 1
            item.update(
                turn=turn,
                stop_reason=m.get("stopReason"),
                error=m.get("errorMessage"),
                usage=m.get("usage") or {},
                model=m.get("model"),
            )
        if role == "toolResult":
            item.update(tool=m.get("toolName"), call_id=m.get("toolCallId"), is_error=bool(m.get("isError")))
        if role == "system":  # a session that keeps the prompt (Pi 1.x): show what the model was sent
            text, cut = _clip(harness.system_text(m))
            item["blocks"].append({"kind": "text", "text": text, "cut": cut})
            items.append(item)
            continue
        for p in _parts_text(m.get("content")):
            kind = p.get("type")
            if kind == "toolCall":
                item["blocks"].append({"kind": "call", **tool_call_view(p, card, harness)})
            elif kind in ("text", "thinking"):
                text, cut = _clip(str(p.get("text" if kind == "text" else "thinking") or ""))
                item["blocks"].append({"kind": kind, "text": text, "cut": cut})
            elif kind == "image":
                item["blocks"].append({"kind": "text", "text": f"[image {p.get('mimeType', '')}]", "cut": 0})
            else:
                text, cut = _clip(dumps_compact_str(p))
                item["blocks"].append({"kind": "other", "text": text, "cut": cut})
        if role not in ("user", "assistant", "toolResult") and not item["blocks"]:
            text, cut = _clip(dumps_compact_str(m))
            item["blocks"].append({"kind": "other", "text": text, "cut": cut})
        items.append(item)
    return items


_CUT_OFF = {
    "output_cap": "{harness} was killed here: the output capture cap was hit while the model streamed. The message being "
    "streamed never ended, so it is in neither file (the runner keeps no stream deltas).",
    "wall_clock": "{harness} was killed here: the wall-clock cap was hit before the episode ended.",
}


def _cut_off(killed: str | None, title: str) -> str | None:
    text = _CUT_OFF.get(killed or "")
    return text.format(harness=title) if text else None


def _tail(path: Path, limit: int = 4000) -> str:
    if not path.is_file():
        return ""
    data = path.read_bytes()
    return data[-limit:].decode("utf-8", errors="replace")


def _task_facts(suite_path: str | None, task_id: str, run_folder: Path) -> dict[str, Any] | None:
    if not suite_path:
        return None
    for base in (Path(suite_path), run_folder / suite_path):
        if (base / task_id / "task.yaml").is_file():
            try:
                t = load_task(base / task_id)
            except Exception:  # noqa: BLE001 - the suite changed since the run; the page shows the session alone
                return None
            return {
                "changed": False,
                "kind": str(t.kind),
                "prompt": t.prompt,
                "validation_command": t.validation_command,
                "checker": t.checker.command,
                "expected_change": [c.model_dump(exclude_none=True) for c in t.expected_change],
                "limits": t.limits.model_dump(),
            }
    return None


def episode_view(
    run_folder: Path, episode: Episode, *, suite_path: str | None = None, card: Any = None, harness: str | None = None
) -> dict[str, Any]:
    """Everything an episode page shows, from the files under ``run_folder`` (the folder of results.json), read back
    through ``harness`` (the spec of the one that ran; default: the default harness)."""
    f, m = episode.facts, episode.metrics
    agent = get_harness(harness)
    read = agent.transcript(
        run_folder / f.events_file, run_folder / f.session_file if f.session_file else None, killed=f.killed is not None
    )
    messages = read.messages
    task = _task_facts(suite_path, f.task_id, run_folder)
    first_user = next((m for m in messages if m.get("role") == "user"), None)
    if task is not None and first_user is not None:
        sent = "".join(p.get("text", "") for p in _parts_text(first_user.get("content")) if p.get("type") == "text")
        task["changed"] = sent.strip() != task["prompt"].strip()  # the suite was edited since the run
    caps = []
    if f.killed == "output_cap":
        caps.append(("output cap", f"runaway: the output capture cap was hit and {agent.title} was killed"))
    if f.killed == "wall_clock":
        caps.append(("wall clock", f"the wall-clock cap was hit and {agent.title} was killed"))
    if f.turn_cap_hit:
        caps.append(("turn cap", f"the turn cap ({f.max_turns} turns) aborted the agent"))
    return {
        "facts": f,
        "metrics": m,
        "messages": _items(messages, card, agent),
        "source": read.source,
        "caps": caps,
        "cut_off": _cut_off(f.killed, agent.title),
        "stderr": _tail(run_folder / f.stderr_file),
        "task": task,
        "passed": bool(m and m.complete_loop),
        "scored": m is not None,
    }
