"""Pi session reader (``~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl``), v1 linear and v2/v3 trees.

Why it looks the way it does: Pi rebuilds what it sends from the session file with ``buildSessionContext`` (walk
from the last entry to the root by ``parentId``; a compaction entry replaces what came before its
``firstKeptEntryId`` with a summary) and ``convertToLlm`` (``bashExecution`` → a user message "Ran `cmd`…",
``custom_message`` → a user message, ``branch_summary`` → a user message with Pi's summary wrapper). This reader
does the same, so the trajectory is the context Pi itself would have replayed.

Policies (also in the ledger):
- The *active branch* (path to the last entry) is one trajectory. Every other leaf of the tree is its own
  trajectory with flag ``side_branch``; the gate rejects it (``side_branch``) because its prefix duplicates the
  active branch and Pi never replays it.
- v1 files (no ids) are linear: each entry's parent is the previous one.
- Assistant turns with ``stopReason`` ``aborted``/``error`` are kept in the trajectory with that stop reason;
  the converter drops them as Pi does on the wire.
- ``bashExecution`` with ``excludeFromContext`` (``!!cmd``) is left out, as Pi leaves it out.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import BaseTraceReader
from harnessfit.formats.reading import first_json_line
from harnessfit.harness.pi_results import bash_user_text

__all__ = ["PiReader", "COMPACTION_PREFIX", "COMPACTION_SUFFIX", "BRANCH_PREFIX", "BRANCH_SUFFIX"]

COMPACTION_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
COMPACTION_SUFFIX = "\n</summary>"
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUFFIX = "</summary>"

_MESSAGE_TYPES = {"message", "custom_message", "branch_summary"}


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _user_step(content: Any, **meta: Any) -> Step:
    blocks = _blocks(content)
    parts = [b.get("text") or "" for b in blocks if b.get("type") == "text"]
    images = sum(1 for b in blocks if b.get("type") == "image")
    return Step(role="user", text="\n".join(parts), images=images, meta={"parts": parts, **meta})


_RECEIVED = "\n\nReceived arguments:\n"


def _call_arguments(block: dict[str, Any]) -> Any:
    """A tool call's arguments as the model sent them. Pi 1.x stores text it could not parse into an object as
    ``arguments: {}`` plus ``argumentsError: "<reason>\\n\\nReceived arguments:\\n<text as sent>"`` (pi-ai
    ``parseToolCallArguments``); the text as sent is the call (the converter decides, as for any string)."""
    error = block.get("argumentsError")
    if isinstance(error, str) and _RECEIVED in error:
        return error.split(_RECEIVED, 1)[1]
    return block.get("arguments")


def _message_step(msg: dict[str, Any]) -> Step | None:
    role = msg.get("role")
    if role == "user":
        return _user_step(msg.get("content"))
    if role == "assistant":
        blocks = _blocks(msg.get("content"))
        text = "".join(b.get("text") or "" for b in blocks if b.get("type") == "text" and (b.get("text") or "").strip())
        thinking = [b.get("thinking") or "" for b in blocks if b.get("type") == "thinking"]
        calls = [
            ToolCall(id=str(b.get("id") or ""), name=str(b.get("name") or ""), arguments=_call_arguments(b))
            for b in blocks
            if b.get("type") == "toolCall"
        ]
        return Step(
            role="assistant",
            text=text or None,
            reasoning="\n".join(t for t in thinking if t.strip()) or None,
            tool_calls=calls,
            stop_reason=msg.get("stopReason"),
            meta={"model": msg.get("model"), "provider": msg.get("provider")},
        )
    if role == "toolResult":
        blocks = _blocks(msg.get("content"))
        return Step(
            role="tool",
            tool_call_id=str(msg.get("toolCallId") or ""),
            tool_name=msg.get("toolName"),
            text="\n".join(b.get("text") or "" for b in blocks if b.get("type") == "text"),
            is_error=bool(msg.get("isError")),
            images=sum(1 for b in blocks if b.get("type") == "image"),
        )
    if role == "system":
        return _system_step(msg)
    if role == "bashExecution":
        if msg.get("excludeFromContext"):
            return None
        text = bash_user_text(
            str(msg.get("command") or ""), str(msg.get("output") or ""), msg.get("exitCode"), bool(msg.get("cancelled"))
        )
        return Step(role="user", text=text, meta={"parts": [text], "bash_execution": True})
    return Step(role="user", text="", meta={"parts": [], "unknown_role": str(role)})


def _system_step(msg: dict[str, Any]) -> Step:
    """A ``system`` message (Pi 1.x keeps the system prompt in the session: ``content`` plus named ``sections``, and
    ``toolsAdded``/``toolsRemoved`` declarations). Its text is pi-ai's ``getSystemMessageText`` (content, then every
    non-null section, non-empty parts joined by a blank line); the converter replaces it with the card's prompt."""
    parts = [b.get("text") or "" for b in _blocks(msg.get("content")) if b.get("type") == "text"]  # contentText
    sections = msg.get("sections") if isinstance(msg.get("sections"), dict) else {}
    text = "\n\n".join(p for p in ["\n".join(parts), *(v for v in sections.values() if isinstance(v, str))] if p)
    tools = [t.get("name") for t in msg.get("toolsAdded") or [] if isinstance(t, dict)]
    return Step(role="system", text=text, meta={"sections": list(sections), "tools_added": tools,
                                               "tools_removed": list(msg.get("toolsRemoved") or [])})


def _entry_step(entry: dict[str, Any]) -> Step | None:
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), dict):
        return _message_step(entry["message"])
    if kind == "custom_message":
        return _user_step(entry.get("content"), custom=True)
    if kind == "branch_summary" and entry.get("summary"):
        text = BRANCH_PREFIX + str(entry["summary"]) + BRANCH_SUFFIX
        return Step(role="user", text=text, meta={"parts": [text], "branch_summary": True})
    return None


class PiReader(BaseTraceReader):
    """Reads Pi session JSONL files (any layout version) into trajectories."""

    name = "pi"

    def detect(self, path: Path) -> bool:
        head = first_json_line(path)
        return isinstance(head, dict) and head.get("type") == "session" and ("cwd" in head or "version" in head)

    def read_file(self, path: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        header: dict[str, Any] | None = None
        entries: list[tuple[int, dict[str, Any]]] = []
        lost: list[int] = []
        truncated = False
        for item in self.json_lines(path, sha):
            if isinstance(item, Rejection):
                lost.append(item.line_start or 0)
                truncated = truncated or item.reason == Reason.truncated_file
                yield item
                continue
            value = item.value
            if not isinstance(value, dict):
                lost.append(item.lineno)
                yield self.reject(path, sha, Reason.parse_error, f"line {item.lineno}: not a JSON object",
                                  "each line must be one session entry object", line=item.lineno)
                continue
            if value.get("type") == "session" and header is None:
                header = value
                continue
            entries.append((item.lineno, value))
        if header is None or not entries:
            yield self.reject(
                path, sha, Reason.empty, "session has no header or no entries",
                "a Pi session needs its header line and at least one message",
            )
            return
        version = header.get("version") or 1
        # v1 (no ids): linear chain. Later versions: the id/parentId tree.
        ids: list[str] = []
        parent: dict[str, str | None] = {}
        by_id: dict[str, tuple[int, dict[str, Any]]] = {}
        prev: str | None = None
        for k, (lineno, entry) in enumerate(entries):
            eid = entry.get("id")
            if not isinstance(eid, str) or not eid or version == 1:
                eid = f"#{k}"
                parent[eid] = prev
            else:
                p = entry.get("parentId")
                parent[eid] = p if isinstance(p, str) else None
            by_id[eid] = (lineno, entry)
            ids.append(eid)
            prev = eid
        children = {p for p in parent.values() if p is not None}
        active_leaf = ids[-1]
        leaves = [active_leaf] + [e for e in ids if e not in children and e != active_leaf]
        cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else None
        ts = header.get("timestamp")
        date = ts[:10] if isinstance(ts, str) and len(ts) >= 10 else None
        flags_common = []
        if lost:
            flags_common.append("lines_lost")
        if truncated:
            flags_common.append("truncated")
        for n, leaf in enumerate(leaves):
            path_ids: list[str] = []
            seen: set[str] = set()
            cur: str | None = leaf
            while cur is not None and cur in by_id and cur not in seen:
                seen.add(cur)
                path_ids.append(cur)
                cur = parent.get(cur)
            path_ids.reverse()
            steps, transformations = self._context(path_ids, by_id)
            lines = [by_id[e][0] for e in path_ids]
            flags = list(flags_common) + (["side_branch"] if n > 0 else [])
            if version == 1:
                transformations.insert(0, "pi.session_v1_linear")
            yield self.trajectory(
                path, sha, key=f"leaf:{leaf}", steps=steps, cwd=cwd, date=date, flags=flags,
                line_start=min(lines) if lines else None, line_end=max(lines) if lines else None,
                transformations=transformations,
            )

    @staticmethod
    def _context(path_ids: list[str], by_id: dict[str, tuple[int, dict[str, Any]]]) -> tuple[list[Step], list[str]]:
        """Pi's ``buildSessionContext`` over one root→leaf path."""
        transformations: list[str] = []
        compaction_idx = None
        for i, eid in enumerate(path_ids):
            if by_id[eid][1].get("type") == "compaction":
                compaction_idx = i
        steps: list[Step] = []
        if compaction_idx is None:
            order = path_ids
        else:
            comp = by_id[path_ids[compaction_idx]][1]
            text = COMPACTION_PREFIX + str(comp.get("summary") or "") + COMPACTION_SUFFIX
            steps.append(Step(role="user", text=text, meta={"parts": [text], "compaction_summary": True}))
            first_kept = comp.get("firstKeptEntryId")
            kept: list[str] = []
            found = False
            for eid in path_ids[:compaction_idx]:
                found = found or by_id[eid][1].get("id") == first_kept
                if found:
                    kept.append(eid)
            order = kept + path_ids[compaction_idx + 1 :]
            transformations.append("pi.compaction_applied")
        for eid in order:
            entry = by_id[eid][1]
            step = _entry_step(entry)
            if step is None:
                if entry.get("type") == "message" and (entry.get("message") or {}).get("role") == "bashExecution":
                    transformations.append("pi.bash_excluded_from_context")
                continue
            if step.meta.get("bash_execution"):
                transformations.append("pi.bashExecution->user_text")
            steps.append(step)
        return steps, transformations
