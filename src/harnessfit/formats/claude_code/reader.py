"""Claude Code session reader (``~/.claude/projects/<project>/<session>.jsonl``).

Why: Claude Code writes one API message over several lines (one content block per line, same ``message.id``),
puts tool results into *user* lines, and interleaves many bookkeeping line types. This reader merges split
messages, turns tool_result blocks into tool steps (keeping ``toolUseResult`` in ``meta`` for the mapping), and
counts noise lines instead of treating them as data.

Policies:
- Noise (not rejections; counted in ``Trajectory`` meta-less stats via ``provenance.transformations``):
  file-history-snapshot, progress, queue-operation, summary, system, permission-mode, attachment, ai-title,
  last-prompt, custom-title, any other non user/assistant line type, and ``isMeta`` user lines.
- Slash-command echoes (``<command-name>``, ``<local-command-stdout>``…) are local UI, not prompts: dropped and
  recorded. "[Request interrupted by user…]" markers are dropped and recorded (Pi drops the aborted turn).
- Sub-agents: lines with ``isSidechain: true`` are a sub-agent's run written into the parent's file (one per
  ``Task`` call, possibly several running at once, so their lines interleave). Each sidechain is one trajectory,
  found by its root: a sidechain line whose ``parentUuid`` is null or names no sidechain line starts one, and every
  line whose parent is in a sidechain belongs to that sidechain. They are flagged ``subagent`` (the gate rejects
  them: a sub-agent's prompt is written by the parent agent, not a user, and Pi has no Task tool). The main thread
  (every other user/assistant line, in file order) is its own trajectory and is not flagged; its ``Task`` calls are
  what the mapping rejects. A file under ``subagents/`` is a sub-agent's transcript: flagged as a whole.
- A user's rejection of a tool call (``is_error`` result "doesn't want to proceed…") → flag
  ``user_rejected_tool`` and ``meta["user_rejected"]`` on the result step: Pi has no approval step, so the gate
  rejects the trajectory (``user_rejected_call``) and keeps the actions before the refused call.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import BaseTraceReader
from harnessfit.formats.reading import first_json_line, sniff

__all__ = ["ClaudeCodeReader", "NOISE_TYPES", "USER_REJECTION_MARK"]

NOISE_TYPES = frozenset(
    {
        "file-history-snapshot", "progress", "queue-operation", "summary", "system", "permission-mode", "attachment",
        "ai-title", "last-prompt", "custom-title", "tag", "agent-name",
    }
)
USER_REJECTION_MARK = "doesn't want to proceed with this tool use"
_LOCAL_COMMAND_TAGS = ("<command-name>", "<command-message>", "<local-command-stdout>", "<local-command-stderr>",
                       "<local-command-caveat>", "<bash-input>", "<bash-stdout>", "<bash-stderr>")
_INTERRUPT_MARKS = ("[Request interrupted by user", )
_CLAUDE_KEYS = {"sessionId", "parentUuid", "uuid", "userType", "isSidechain"}


def _result_text(content: Any) -> tuple[str, int]:
    if isinstance(content, str):
        return content, 0
    if isinstance(content, list):
        texts = [b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text"]
        images = sum(1 for b in content if isinstance(b, dict) and b.get("type") == "image")
        return "\n".join(texts), images
    return "", 0


class _Thread:
    """The steps of one thread of a session file (the main thread, or one sidechain) while the file is read."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.flags: set[str] = set()
        self.transformations: list[str] = []
        self.first_line: int | None = None
        self.last_line: int | None = None
        self.last_msg_id: str | None = None
        self.lost_at: int | None = None
        self.lost_pending = False

    def lost(self, truncated: bool) -> None:
        """A line of the file could not be read: the steps so far are whole, what follows may miss it."""
        self.flags.add("lines_lost")
        if truncated:
            self.flags.add("truncated")
        if self.lost_at is None:
            self.lost_at = len(self.steps)

    def add(self, reader: ClaudeCodeReader, lineno: int, kind: str, msg: dict[str, Any], line: dict[str, Any]) -> None:
        self.first_line = self.first_line or lineno
        self.last_line = lineno
        content = msg.get("content")
        if kind == "assistant":
            mid = msg.get("id") if isinstance(msg.get("id"), str) else None
            steps = self.steps
            if mid is not None and mid == self.last_msg_id and steps and steps[-1].role == "assistant":
                step = steps[-1]
                self.transformations.append("claude.merge_split_message")
            else:
                step = Step(role="assistant", stop_reason=msg.get("stop_reason"))
                steps.append(step)
            self.last_msg_id = mid
            reader._add_assistant_blocks(step, content)
            if msg.get("stop_reason"):
                step.stop_reason = msg.get("stop_reason")
            return
        self.last_msg_id = None
        reader._add_user(line, content, self.steps, self.flags, self.transformations)


class ClaudeCodeReader(BaseTraceReader):
    """Reads one Claude Code session file into one trajectory (plus per-line rejections for unreadable lines)."""

    name = "claude_code"

    def detect(self, path: Path) -> bool:
        if not path.is_file():
            return False
        head = sniff(path, 65536)
        if b'"sessionId"' not in head and b'"parentUuid"' not in head:
            return False
        first = first_json_line(path)
        return isinstance(first, dict) and (
            bool(_CLAUDE_KEYS & set(first)) or first.get("type") in NOISE_TYPES
        )

    def read_file(self, path: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        main = _Thread()
        threads: dict[str, _Thread] = {"": main}  # "" = the main thread, else a sidechain's root uuid
        side_root: dict[str, str] = {}  # uuid of a sidechain line -> its sidechain's root
        noise = 0
        cwd = date = version = None
        whole_file_subagent = "subagents" in path.parts
        for item in self.json_lines(path, sha):
            if isinstance(item, Rejection):
                for t in threads.values():  # the lost line may have been any thread's
                    t.lost(item.reason == Reason.truncated_file)
                main.lost_pending = True
                yield item
                continue
            line = item.value
            if not isinstance(line, dict):
                for t in threads.values():
                    t.lost(False)
                main.lost_pending = True
                yield self.reject(path, sha, Reason.parse_error, f"line {item.lineno}: not a JSON object",
                                  "each line must be one object", line=item.lineno)
                continue
            uuid = line.get("uuid") if isinstance(line.get("uuid"), str) else None
            key = ""
            if line.get("isSidechain"):
                parent = line.get("parentUuid")
                key = side_root.get(parent) if isinstance(parent, str) else None  # type: ignore[assignment]
                key = key or uuid or f"line{item.lineno}"
                if uuid is not None:
                    side_root[uuid] = key
            kind = line.get("type")
            msg = line.get("message")
            if kind not in ("user", "assistant") or not isinstance(msg, dict) or line.get("isMeta"):
                noise += 1
                continue
            thread = threads.get(key)
            if thread is None:
                thread = threads[key] = _Thread()
                if main.lost_pending:  # a line was lost before this sidechain began: it may have been its own
                    thread.lost(False)
            cwd = cwd or (line.get("cwd") if isinstance(line.get("cwd"), str) else None)
            ts = line.get("timestamp")
            date = date or (ts[:10] if isinstance(ts, str) and len(ts) >= 10 else None)
            version = version or (line.get("version") if isinstance(line.get("version"), str) else None)
            thread.add(self, item.lineno, kind, msg, line)
        if all(not t.steps for t in threads.values()):
            yield self.reject(path, sha, Reason.empty, f"no user/assistant messages ({noise} bookkeeping lines)",
                              "the session holds no conversation")
            return
        sidechains = sum(1 for k, t in threads.items() if k and t.steps)
        for key, t in threads.items():
            if not t.steps:
                continue
            notes = [f"claude.noise_lines_skipped:{noise}"] if noise else []
            if key:
                notes.append(f"claude.sidechain_split_by_root:{sidechains}")
            elif sidechains:
                notes.append(f"claude.sidechains_split_off:{sidechains}")
            flags = set(t.flags)
            if key or whole_file_subagent:
                flags.add("subagent")
            traj = self.trajectory(
                path, sha, key=f"sidechain:{key}" if key else "session", steps=t.steps, cwd=cwd, date=date,
                source_harness_version=version, flags=sorted(flags), line_start=t.first_line, line_end=t.last_line,
                transformations=list(dict.fromkeys([*notes, *t.transformations])),
            )
            traj.lost_at = t.lost_at
            yield traj

    @staticmethod
    def _add_assistant_blocks(step: Step, content: Any) -> None:
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            return
        for b in blocks:
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "text":
                text = b.get("text") or ""
                if text.strip():
                    step.text = (step.text or "") + text
            elif kind == "thinking":
                thought = b.get("thinking") or ""
                if thought.strip():
                    step.reasoning = (step.reasoning + "\n" if step.reasoning else "") + thought
            elif kind == "tool_use":
                step.tool_calls.append(
                    ToolCall(id=str(b.get("id") or ""), name=str(b.get("name") or ""), arguments=b.get("input"))
                )

    @staticmethod
    def _add_user(line: dict[str, Any], content: Any, steps: list[Step], flags: set[str], tr: list[str]) -> None:
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            return
        texts: list[str] = []
        images = 0
        for b in blocks:
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "tool_result":
                text, imgs = _result_text(b.get("content"))
                is_error = bool(b.get("is_error"))
                meta: dict[str, Any] = {"toolUseResult": line.get("toolUseResult")}
                if is_error and USER_REJECTION_MARK in text:
                    flags.add("user_rejected_tool")
                    meta["user_rejected"] = True
                steps.append(
                    Step(
                        role="tool", tool_call_id=str(b.get("tool_use_id") or ""), text=text, is_error=is_error,
                        images=imgs, meta=meta,
                    )
                )
            elif kind == "text":
                texts.append(b.get("text") or "")
            elif kind == "image":
                images += 1
        text = "\n".join(texts)
        stripped = text.strip()
        if not stripped and not images:
            return
        if stripped.startswith(_LOCAL_COMMAND_TAGS):
            tr.append("claude.drop_local_command_echo")
            return
        if stripped.startswith(_INTERRUPT_MARKS):
            tr.append("claude.drop_interrupt_marker")
            return
        steps.append(Step(role="user", text=text, images=images, meta={"parts": [text] if text else []}))
