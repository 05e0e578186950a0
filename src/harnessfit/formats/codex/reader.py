"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) into one Trajectory per file.

Every line is an envelope ``{timestamp, type, payload}``. Only ``response_item`` payloads are the conversation;
``event_msg`` repeats user and agent messages for the UI (reading both would count every message twice), so event
messages are ignored and the number ignored is recorded. ``session_meta`` and ``turn_context`` give the working
directory, the date, the repository and the CLI version.

The first user items of a rollout are context Codex injects (``<environment_context>``, ``# AGENTS.md
instructions``, ``<user_instructions>``, permission notes in ``developer`` messages): they are not the user's
request and are left out, each recorded. Consecutive assistant-side items (reasoning, message, function calls)
belong to one model response and become one assistant step; tool outputs become tool steps in file order.

Tool calls keep Codex's own names and raw argument strings; ``harnessfit.formats.codex.mapping`` maps them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harnessfit.core.jsonio import JsonLine, dumps_compact_str
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import BaseTraceReader
from harnessfit.formats.reading import first_json_line

__all__ = ["CodexReader", "INJECTED_PREFIXES"]

FORMAT = "codex"
ENVELOPE_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})

INJECTED_PREFIXES = (
    "<environment_context>",
    "# AGENTS.md instructions",
    "<user_instructions>",
    "<permissions instructions>",
    "<subagent_notification>",
    "<turn_aborted>",
)
"""User-role texts Codex writes itself; a user item made only of these is not the user's request."""

CALL_TYPES = {
    "function_call": "function",
    "custom_tool_call": "custom",
    "local_shell_call": "local_shell",
    "tool_search_call": "tool_search",
    "web_search_call": "web_search",
}
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output", "local_shell_call_output"})


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
    return out


def _images(content: Any) -> int:
    if not isinstance(content, list):
        return 0
    return sum(1 for p in content if isinstance(p, dict) and p.get("type") in ("input_image", "image"))


class _Builder:
    """Accumulates steps while walking the envelopes of one rollout."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.flags: set[str] = set()
        self.cwd: str | None = None
        self.date: str | None = None
        self.repository: str | None = None
        self.version: str | None = None
        self.counts: dict[str, int] = {}
        self.seen_request = False
        self.lost_at: int | None = None

    def count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def _assistant(self) -> Step:
        if not self.steps or self.steps[-1].role != "assistant":
            self.steps.append(Step(role="assistant"))
        return self.steps[-1]

    def meta(self, payload: dict[str, Any], timestamp: Any) -> None:
        self.cwd = self.cwd or (payload.get("cwd") if isinstance(payload.get("cwd"), str) else None)
        ts = payload.get("timestamp") if isinstance(payload.get("timestamp"), str) else timestamp
        if self.date is None and isinstance(ts, str) and len(ts) >= 10:
            self.date = ts[:10]
        git = payload.get("git")
        if isinstance(git, dict) and isinstance(git.get("repository_url"), str):
            self.repository = git["repository_url"]
        if isinstance(payload.get("cli_version"), str):
            self.version = payload["cli_version"]
        source = payload.get("source")
        if isinstance(source, dict) and "subagent" in source:
            self.flags.add("subagent")

    def turn_context(self, payload: dict[str, Any]) -> None:
        if self.cwd is None and isinstance(payload.get("cwd"), str):
            self.cwd = payload["cwd"]
        if isinstance(payload.get("current_date"), str) and self.date is None:
            self.date = payload["current_date"]

    def message(self, payload: dict[str, Any]) -> None:
        role = payload.get("role")
        texts = _texts(payload.get("content"))
        if role in ("developer", "system"):
            self.count(f"{role}_message_dropped")
            return
        if role == "user":
            kept = [t for t in texts if not t.lstrip().startswith(INJECTED_PREFIXES)]
            if len(kept) < len(texts):
                self.count("injected_context_dropped")
                if any(t.lstrip().startswith("<subagent_notification>") for t in texts):
                    self.flags.add("subagent_notification")
            images = _images(payload.get("content"))
            if not kept and not images:
                return
            self.steps.append(Step(role="user", text="\n".join(kept), images=images))
            return
        if role == "assistant":
            step = self._assistant()
            text = "\n\n".join(texts)
            if step.text:
                step.text = f"{step.text}\n\n{text}"
                self.count("assistant_messages_merged")
            else:
                step.text = text
            return
        self.count(f"unknown_role_{role}")

    def reasoning(self, payload: dict[str, Any]) -> None:
        content = "\n\n".join(_texts(payload.get("content")))
        if payload.get("encrypted_content"):
            self.count("encrypted_reasoning_ignored")
        if _texts(payload.get("summary")):
            self.count("reasoning_summary_ignored")  # a summary written for the UI, not the model's reasoning
        text = content
        if not text:
            return
        step = self._assistant()
        step.reasoning = f"{step.reasoning}\n\n{text}" if step.reasoning else text

    def call(self, kind: str, payload: dict[str, Any], index: int) -> None:
        # a call without an id is named by its record's position (not its line: the id must not depend on layout)
        call_id = payload.get("call_id") or payload.get("id") or f"codex_record_{index}"
        if kind == "function":
            name, args = payload.get("name"), payload.get("arguments")
        elif kind == "custom":
            name, args = payload.get("name"), payload.get("input")
        elif kind == "local_shell":
            name, args = "local_shell", payload.get("action")
        elif kind == "tool_search":
            name, args = "tool_search", payload.get("arguments")
        else:
            name, args = "web_search", payload.get("action")
        call = ToolCall(id=str(call_id), name=str(name or ""), arguments=args)
        self._assistant().tool_calls.append(call)
        if payload.get("namespace"):
            self._assistant().meta.setdefault("namespaces", {})[call.id] = payload["namespace"]

    def output(self, payload: dict[str, Any]) -> None:
        out = payload.get("output")
        if payload.get("type") == "tool_search_output":
            out = payload.get("tools")
        text = out if isinstance(out, str) else dumps_compact_str(out)
        step = Step(role="tool", tool_call_id=str(payload.get("call_id") or ""), text=text)
        step.meta["output_type"] = payload.get("type")
        self.steps.append(step)


class CodexReader(BaseTraceReader):
    """Reads Codex CLI rollout JSONL files (2025 ``shell`` era and 2026 ``exec_command`` era)."""

    name = FORMAT

    def detect(self, path: Path) -> bool:
        try:
            first = first_json_line(path)
            return (
                isinstance(first, dict)
                and first.get("type") in ENVELOPE_TYPES
                and isinstance(first.get("payload"), dict)
                and "timestamp" in first
            )
        except Exception:  # noqa: BLE001 - detect must never raise
            return False

    def read_file(self, path: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        b = _Builder()
        lost = False
        first_line = last_line = None
        index = 0
        for item in self.json_lines(path, sha):
            index += 1
            if isinstance(item, Rejection):
                if not lost:
                    b.lost_at = len(b.steps)
                lost = True
                yield item
                continue
            first_line = first_line or item.lineno
            last_line = item.lineno
            self._envelope(b, item, index)
        if first_line is None:
            if not lost:
                yield self.reject(path, sha, Reason.empty, "no JSON lines", "re-export the rollout")
            return
        if not any(s.role in ("user", "assistant") for s in b.steps):
            yield self.reject(
                path, sha, Reason.empty, "rollout has no user or assistant messages",
                "nothing to train on: drop the file", line_start=first_line, line_end=last_line,
            )
            return
        notes = [f"codex: {k} x{v}" for k, v in sorted(b.counts.items())]
        flags = set(b.flags)
        if lost:
            flags.add("lines_lost")
        traj = self.trajectory(
            path, sha, key="rollout", steps=b.steps, cwd=b.cwd, date=b.date,
            repository=b.repository, source_harness_version=b.version, flags=sorted(flags),
            line_start=first_line, line_end=last_line, transformations=notes,
        )
        traj.lost_at = b.lost_at
        yield traj

    @staticmethod
    def _envelope(b: _Builder, item: JsonLine, index: int) -> None:
        env = item.value
        if not isinstance(env, dict) or not isinstance(env.get("payload"), dict):
            b.count("non_envelope_line_ignored")
            return
        etype, payload = env.get("type"), env["payload"]
        if etype == "session_meta":
            b.meta(payload, env.get("timestamp"))
        elif etype == "turn_context":
            b.turn_context(payload)
        elif etype == "event_msg":
            b.count(f"event_msg_{payload.get('type')}_ignored")
        elif etype == "compacted":
            b.count("compacted")
        elif etype == "response_item":
            ptype = payload.get("type")
            if ptype == "message":
                b.message(payload)
            elif ptype == "reasoning":
                b.reasoning(payload)
            elif ptype in CALL_TYPES:
                b.call(CALL_TYPES[ptype], payload, index)
            elif ptype in OUTPUT_TYPES:
                b.output(payload)
            else:
                b.count(f"response_item_{ptype}_ignored")
        else:
            b.count(f"envelope_{etype}_ignored")

