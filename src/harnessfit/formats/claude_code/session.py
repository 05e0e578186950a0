"""The state of one Claude Code session file while the reader reads it: its threads (the main thread's compaction
epochs, one per sidechain), the slash-command echoes seen so far, and the bookkeeping lines skipped. The rules are in
``formats.claude_code.reader``'s docstring; the line shapes in ``formats.claude_code.lines``."""

from __future__ import annotations

from typing import Any

from harnessfit.core.trajectory import CONTEXT_NOT_REBUILT, Step, ToolCall
from harnessfit.formats.claude_code.lines import (
    SYNTHETIC_MODEL,
    compaction,
    has_tool_result,
    is_command_echo,
    is_local_command_text,
    message_text,
    tool_use_ids,
)

__all__ = ["USER_REJECTION_MARK", "Session", "Thread"]

USER_REJECTION_MARK = "doesn't want to proceed with this tool use"
_INTERRUPT_MARKS = ("[Request interrupted by user",)


def _result_text(content: Any) -> tuple[str, int]:
    if isinstance(content, str):
        return content, 0
    if isinstance(content, list):
        texts = [b.get("text") or "" for b in content if isinstance(b, dict) and b.get("type") == "text"]
        images = sum(1 for b in content if isinstance(b, dict) and b.get("type") == "image")
        return "\n".join(texts), images
    return "", 0


class Thread:
    """The steps of one thread of a session file (a compaction epoch of the main thread, or one sidechain)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.flags: set[str] = set()
        self.transformations: list[str] = []
        self.first_line: int | None = None
        self.last_line: int | None = None
        self.open_turn: tuple[str, Step] | None = None  # the message id and turn whose lines may still follow
        self.lost_at: int | None = None
        self.fresh = True  # no message line yet
        self.blind: str | None = None  # why the context is not in the file from here on (its calls are skipped)
        self.skipped: set[str] = set()
        self.skipped_anonymous = 0

    @property
    def skipped_calls(self) -> int:
        return len(self.skipped) + self.skipped_anonymous

    def lost(self, truncated: bool) -> None:
        """A line of the file could not be read: the steps so far are whole, what follows may miss it."""
        self.flags.add("lines_lost")
        if truncated:
            self.flags.add("truncated")
        if self.lost_at is None:
            self.lost_at = len(self.steps)

    def go_blind(self, why: str) -> None:
        if self.blind is None:
            self.blind = why
            self.transformations.append(f"claude.{CONTEXT_NOT_REBUILT}:{why}")

    def add(self, lineno: int, kind: str, msg: dict[str, Any], line: dict[str, Any]) -> Step | None:
        """Add one user or assistant line; the step it made or added to (``None`` when it made none: local UI, a
        dropped line, or a line after the point where the context is no longer in the file)."""
        self.first_line = self.first_line or lineno
        self.last_line = lineno
        self.fresh = False
        content = msg.get("content")
        if self.blind is not None:  # count the calls (each id once, as split messages repeat none), keep no step
            for cid in tool_use_ids(content) if kind == "assistant" else []:
                if cid is None:
                    self.skipped_anonymous += 1
                else:
                    self.skipped.add(cid)
            return None
        if kind == "assistant":
            return self._assistant(msg, line)
        step = add_user(line, content, self.steps, self.flags, self.transformations)
        if step is not None or not self._answers_open_turn(content):
            self.open_turn = None  # a user message (or anything but its results) ends the message's lines
        return step

    def _answers_open_turn(self, content: Any) -> bool:
        """The line holds results only, each of a call of the open assistant message: Claude Code writes a call's
        result as soon as the call has run, between the lines of the message that made it."""
        if self.open_turn is None or not has_tool_result(content):
            return False
        calls = {c.id for c in self.open_turn[1].tool_calls}
        blocks = [b for b in content if isinstance(b, dict)]
        return all(b.get("type") == "tool_result" and str(b.get("tool_use_id") or "") in calls for b in blocks)

    def _assistant(self, msg: dict[str, Any], line: dict[str, Any]) -> Step | None:
        content = msg.get("content")
        mid = msg.get("id") if isinstance(msg.get("id"), str) else None
        if line.get("isApiErrorMessage"):  # Claude Code's error text: Pi drops an error turn from the wire
            step = Step(role="assistant", stop_reason="error")
            self.steps.append(step)
            add_assistant_blocks(step, content)
            self.transformations.append("claude.api_error_turn")
            self.open_turn = None
            return step
        if msg.get("model") == SYNTHETIC_MODEL and not tool_use_ids(content):
            self.transformations.append("claude.drop_synthetic_assistant")  # no model wrote it
            self.open_turn = None
            return None
        if mid is not None and self.open_turn is not None and self.open_turn[0] == mid:
            step = self.open_turn[1]  # the same message: its results written so far stay after the whole turn
            self.transformations.append("claude.merge_split_message")
            if self.steps[-1] is not step:
                self.transformations.append("claude.merge_split_message_across_results")
        else:
            step = Step(role="assistant", stop_reason=msg.get("stop_reason"))
            self.steps.append(step)
        self.open_turn = (mid, step) if mid is not None else None
        add_assistant_blocks(step, content)
        if msg.get("stop_reason"):
            step.stop_reason = msg.get("stop_reason")
        return step


class Session:
    """One file's threads while it is read; ``feed`` takes each JSON object line in file order."""

    def __init__(self) -> None:
        self.epochs: list[Thread] = [Thread()]  # the main thread, split at each compaction
        self.sides: dict[str, Thread] = {}  # a sidechain's root uuid -> its thread
        self.side_root: dict[str, str] = {}  # uuid of a sidechain line -> its sidechain's root
        self.seen: set[str] = set()  # every uuid so far
        self.echoes: set[str] = set()  # uuids of slash-command echoes
        self.after_echo: dict[str, bool] = {}  # thread key -> its last message line was an echo
        self.noise = 0
        self.lost_pending = False
        self.cwd: str | None = None
        self.date: str | None = None
        self.version: str | None = None
        self.session_id: str | None = None

    def threads(self) -> list[Thread]:
        return [*self.epochs, *self.sides.values()]

    def lost(self, truncated: bool) -> None:
        for t in self.threads():  # the lost line may have been any thread's
            t.lost(truncated)
        self.lost_pending = True

    def feed(self, lineno: int, line: dict[str, Any]) -> None:
        uuid = line.get("uuid") if isinstance(line.get("uuid"), str) else None
        self._feed(lineno, line, uuid, self._key(line, uuid, lineno))
        if uuid is not None:
            self.seen.add(uuid)

    def _key(self, line: dict[str, Any], uuid: str | None, lineno: int) -> str:
        """ "" for the main thread, else the root uuid of the line's sidechain."""
        if not line.get("isSidechain"):
            return ""
        parent = line.get("parentUuid")
        key = (self.side_root.get(parent) if isinstance(parent, str) else None) or uuid or f"line{lineno}"
        if uuid is not None:
            self.side_root[uuid] = key
        return key

    def _feed(self, lineno: int, line: dict[str, Any], uuid: str | None, key: str) -> None:
        kind, msg = line.get("type"), line.get("message")
        event = compaction(line) if key == "" else None
        if kind == "system":
            self.noise += 1
            if event is not None:
                self._compaction(event)
            elif line.get("subtype") == "local_command" and isinstance(line.get("content"), str):
                self._note_echo(key, uuid, line["content"])
            return
        if kind not in ("user", "assistant") or not isinstance(msg, dict):
            self.noise += 1
            return
        note: str | None = None
        if kind == "user" and event == "summary":
            self._compaction(event)
            note = "claude.compact_summary"
        elif kind == "user" and line.get("isMeta"):
            if not self._expands_command(line, key, msg.get("content")):
                self.noise += 1  # local UI or context the model saw but Pi would not send (see the reader)
                self.after_echo[key] = False
                return
            note = "claude.slash_command_prompt"
        if kind == "user":
            self._note_echo(key, uuid, message_text(msg.get("content")))
        else:
            self.after_echo[key] = False
        thread = self._thread(key)
        self._context(line)
        step = thread.add(lineno, kind, msg, line)
        if note is not None and step is not None:
            thread.transformations.append(note)

    def _note_echo(self, key: str, uuid: str | None, text: str) -> None:
        echo = is_command_echo(text)
        self.after_echo[key] = echo
        if echo and uuid is not None:
            self.echoes.add(uuid)

    def _expands_command(self, line: dict[str, Any], key: str, content: Any) -> bool:
        """An ``isMeta`` user line is a prompt command's expansion when its parent is a slash-command echo (or, when
        its parent is no line of the file, when it comes right after one in its thread) and it holds text that is not
        local-command UI."""
        parent = line.get("parentUuid")
        linked = (
            parent in self.echoes
            if isinstance(parent, str) and parent in self.seen
            else self.after_echo.get(key, False)
        )
        if not linked or has_tool_result(content):
            return False
        text = message_text(content)
        return bool(text.strip()) and not is_local_command_text(text)

    def _compaction(self, event: str) -> None:
        main = self.epochs[-1]
        if event == "micro":
            main.go_blind("microcompact_boundary")
            return
        if event == "summary" and main.fresh:
            return  # the boundary right before it opened this epoch, or the file starts with it
        epoch = Thread()
        if event == "kept":
            epoch.go_blind("compaction_kept_messages")
        if self.lost_pending:  # a line was lost before this epoch began: it may have been its summary
            epoch.lost(False)
        self.epochs.append(epoch)

    def _thread(self, key: str) -> Thread:
        if not key:
            return self.epochs[-1]
        thread = self.sides.get(key)
        if thread is None:
            thread = self.sides[key] = Thread()
            if self.lost_pending:  # a line was lost before this sidechain began: it may have been its own
                thread.lost(False)
        return thread

    def _context(self, line: dict[str, Any]) -> None:
        self.cwd = self.cwd or (line.get("cwd") if isinstance(line.get("cwd"), str) else None)
        ts = line.get("timestamp")
        self.date = self.date or (ts[:10] if isinstance(ts, str) and len(ts) >= 10 else None)
        self.version = self.version or (line.get("version") if isinstance(line.get("version"), str) else None)
        sid = line.get("sessionId")
        self.session_id = self.session_id or (sid if isinstance(sid, str) and sid else None)


def add_assistant_blocks(step: Step, content: Any) -> None:
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


def add_user(line: dict[str, Any], content: Any, steps: list[Step], flags: set[str], tr: list[str]) -> Step | None:
    """Tool results become tool steps; the text (and image count) a user step, unless it is local-command UI or an
    interrupt marker. Returns the user step, if one was made."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        return None
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
                    role="tool",
                    tool_call_id=str(b.get("tool_use_id") or ""),
                    text=text,
                    is_error=is_error,
                    images=imgs,
                    meta=meta,
                )
            )
        elif kind == "image":
            images += 1
    text = message_text(blocks)
    stripped = text.strip()
    if not stripped and not images:
        return None
    if is_local_command_text(stripped):
        tr.append("claude.drop_local_command_echo")
        return None
    if stripped.startswith(_INTERRUPT_MARKS):
        tr.append("claude.drop_interrupt_marker")
        return None
    step = Step(role="user", text=text, images=images, meta={"parts": [text] if text else []})
    steps.append(step)
    return step
