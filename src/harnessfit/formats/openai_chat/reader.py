"""OpenAI chat-completions message lists and ShareGPT conversations into one Trajectory per conversation.

Accepted layouts (detected by content):

- a JSON list of messages (one conversation), a JSON list of conversations (each a message list, a
  ``{"messages", "tools"?}`` object or a ShareGPT object), or one ``{"messages": …}`` object;
- JSONL with one conversation object per line (``{"messages": …}`` or ``{"conversations": …}``);
- ShareGPT (LLaMA-Factory style): ``conversations`` with ``from`` human / gpt / function_call / observation /
  system, and ``tools`` as a JSON *string*; a ``function_call`` value is one ``{"name", "arguments"}`` object or a
  list of them (parallel calls, as LLaMA-Factory's ``sharegpt_converter`` reads it), each answered by the following
  ``observation`` turns in order;
- LLaMA-Factory v1 messages (``llamafactory.v1`` ``Message``): ``content`` is a list of ``{"type", "value"}`` blocks —
  ``text`` (joined without a separator, as ``_to_hf_messages`` joins them), ``reasoning``, ``tool_call`` (``value`` is
  the JSON text of ``{"name", "arguments"}``), ``image_url`` / ``video_url`` / ``audio_url`` (media, counted as
  images); its ``tool`` messages carry no call id and answer the preceding assistant's calls in order.

- an LLM completion log (``{"messages", "tools", "response", …}``, as OpenHands' ``log_completions`` and LiteLLM
  write one per model call): the request's ``messages`` and, after them, the answer the model gave
  (``response.choices[0].message``), which is the last assistant turn (recorded).

A tool message without a ``tool_call_id`` (v1, ShareGPT observations) answers the next unanswered call of the
assistant message before it; when none is waiting it is an orphan, for the gates.

Tool-call ``arguments`` are kept exactly as stored (object, JSON text, or a string of a string) so the mapping can
tell double encoding apart. A conversation that declares tools Pi lacks but never calls one is rejected here as
``unsupported_tool``: its answers were written with those tools on offer (e.g. "I can't order that, I can only
search recipes"), which a Pi model with read/bash/edit/write must not learn. A conversation that declares such tools
and calls them is flagged ``foreign_tools``: for the same reason none of its actions is a label, not even those before
the first foreign call (the mapping still names each non-Pi call, for the ledger).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from harnessfit.core.ids import content_id
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import BaseTraceReader
from harnessfit.formats.reading import first_json_line, sniff

__all__ = ["OpenAIChatReader", "PI_TOOL_NAMES"]

FORMAT = "openai_chat"
PI_TOOL_NAMES = frozenset({"read", "bash", "edit", "write"})
_FIRST_KEY = re.compile(rb'\A\[\s*(?:\[\s*)?\{\s*"(\w+)"')
_CHAT_KEYS = frozenset(
    {b"role", b"content", b"messages", b"conversations", b"tools", b"system", b"name", b"tool_calls"}
)
MEDIA_TYPES = frozenset({"image_url", "image", "input_image", "video_url", "audio_url"})
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system"}


def _content(content: Any) -> tuple[str, int, str, list[Any]]:
    """(text, media count, reasoning text, tool-call block values) of an OpenAI or LLaMA-Factory v1 ``content``.

    OpenAI parts are ``{"type": "text", "text": …}`` / image parts; v1 blocks are ``{"type", "value"}``."""
    if content is None:
        return "", 0, "", []
    if isinstance(content, str):
        return content, 0, "", []
    if isinstance(content, list):
        texts, images, reasoning, calls = [], 0, [], []
        for p in content:
            if isinstance(p, dict):
                kind = p.get("type")
                if kind in MEDIA_TYPES:
                    images += 1
                elif isinstance(p.get("text"), str):
                    texts.append(p["text"])
                elif kind == "text" and isinstance(p.get("value"), str):
                    texts.append(p["value"])
                elif kind == "reasoning" and isinstance(p.get("value"), str):
                    reasoning.append(p["value"])
                elif kind == "tool_call" and "value" in p:
                    calls.append(p["value"])
            elif isinstance(p, str):
                texts.append(p)
        return "".join(texts), images, "".join(reasoning), calls
    return str(content), 0, "", []


def _completion_answer(response: Any) -> dict[str, Any] | None:
    """The assistant message of a chat-completion response object (its first choice), if it is one."""
    if not isinstance(response, dict) or not isinstance(response.get("choices"), list) or not response["choices"]:
        return None
    choice = response["choices"][0]
    msg = choice.get("message") if isinstance(choice, dict) else None
    return msg if isinstance(msg, dict) and msg.get("role") == "assistant" else None


def _block_call(value: Any, cid: str) -> ToolCall:
    """A v1 ``tool_call`` block (JSON text of ``{"name", "arguments"}``) or a ShareGPT call object as a ToolCall;
    arguments are kept as stored. A value that is not such an object becomes a call with no name (the mapping
    rejects it with its text)."""
    obj = value
    if isinstance(value, str):
        try:
            obj = orjson.loads(value)
        except orjson.JSONDecodeError:
            obj = None
    if isinstance(obj, dict) and isinstance(obj.get("name"), str):
        return ToolCall(id=cid, name=obj["name"], arguments=obj.get("arguments"))
    return ToolCall(id=cid, name="", arguments=value)


def _is_message(m: Any) -> bool:
    return isinstance(m, dict) and "role" in m


def _is_conversation(x: Any) -> bool:
    return (isinstance(x, list) and bool(x) and all(_is_message(m) for m in x)) or (
        isinstance(x, dict) and (isinstance(x.get("messages"), list) or isinstance(x.get("conversations"), list))
    )


def _declared_tools(tools: Any) -> tuple[list[str], str | None]:
    """Tool names a conversation declares; ``tools`` may be a list or a JSON string (ShareGPT)."""
    if tools is None or tools == "" or tools == []:
        return [], None
    if isinstance(tools, str):
        try:
            tools = orjson.loads(tools)
        except orjson.JSONDecodeError:
            return [], "tools is a string that is not JSON"
    if not isinstance(tools, list):
        return [], "tools is not a list"
    names = []
    for t in tools:
        if isinstance(t, dict):
            fn = t.get("function") if isinstance(t.get("function"), dict) else t
            if isinstance(fn.get("name"), str):
                names.append(fn["name"])
    return names, None


def _openai_steps(messages: list[Any], notes: list[str]) -> list[Step]:
    steps: list[Step] = []
    pending_legacy: list[str] = []
    waiting: list[str] = []  # calls of the latest assistant message not answered yet, in order
    blocks = 0
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            notes.append(f"openai_chat: message {i} is not an object (skipped)")
            continue
        role = m.get("role")
        text, images, block_reasoning, block_calls = _content(m.get("content"))
        if role in ("system", "developer"):
            steps.append(Step(role="system", text=text))
        elif role == "user":
            steps.append(Step(role="user", text=text, images=images))
        elif role == "assistant":
            calls = []
            for j, tc in enumerate(m.get("tool_calls") or []):
                if not isinstance(tc, dict):
                    continue
                fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
                calls.append(
                    ToolCall(
                        id=str(tc.get("id") or f"call_{i}_{j}"),
                        name=str(fn.get("name") or ""),
                        arguments=fn.get("arguments"),
                    )
                )
            for j, value in enumerate(block_calls):
                calls.append(_block_call(value, f"v1_call_{i}_{j}"))
                blocks += 1
            fc = m.get("function_call")
            if isinstance(fc, dict):
                cid = f"legacy_call_{i}"
                pending_legacy.append(cid)
                calls.append(ToolCall(id=cid, name=str(fc.get("name") or ""), arguments=fc.get("arguments")))
            reasoning = m.get("reasoning_content") if isinstance(m.get("reasoning_content"), str) else None
            reasoning = reasoning or block_reasoning or None
            steps.append(Step(role="assistant", text=text or None, tool_calls=calls, reasoning=reasoning))
            waiting = [c.id for c in calls]
        elif role == "tool":
            cid = m.get("tool_call_id")
            if cid is None:
                cid = waiting.pop(0) if waiting else f"unpaired_result_{i}"
            elif str(cid) in waiting:
                waiting.remove(str(cid))
            steps.append(
                Step(
                    role="tool",
                    tool_call_id=str(cid),
                    text=text,
                    images=images,
                    tool_name=m.get("name") if isinstance(m.get("name"), str) else None,
                )
            )
        elif role == "function":
            cid = pending_legacy.pop(0) if pending_legacy else f"legacy_orphan_{i}"
            steps.append(Step(role="tool", tool_call_id=cid, text=text, tool_name=m.get("name")))
        else:
            notes.append(f"openai_chat: message {i} has unknown role {role!r} (skipped)")
    if blocks:
        notes.append("openai_chat: tool_call content blocks read as calls (LLaMA-Factory v1)")
    return steps


def _sharegpt_steps(turns: list[Any], notes: list[str]) -> list[Step] | str:
    steps: list[Step] = []
    waiting: list[str] = []
    for i, t in enumerate(turns):
        if not isinstance(t, dict):
            return f"turn {i} is not an object"
        who, value = t.get("from"), t.get("value")
        value = value if isinstance(value, str) else ""
        if who in SHAREGPT_ROLES:
            steps.append(Step(role=SHAREGPT_ROLES[who], text=value))  # type: ignore[arg-type]
        elif who == "function_call":
            try:
                obj = orjson.loads(value)
            except orjson.JSONDecodeError:
                obj = value
            items = obj if isinstance(obj, list) and obj else [obj]
            calls = [
                _block_call(c, f"sharegpt_call_{i}" if len(items) == 1 else f"sharegpt_call_{i}_{k}")
                for k, c in enumerate(items)
            ]
            waiting = [c.id for c in calls]
            if steps and steps[-1].role == "assistant" and not steps[-1].tool_calls:
                steps[-1].tool_calls.extend(calls)
            else:
                steps.append(Step(role="assistant", tool_calls=calls))
        elif who == "observation":
            steps.append(
                Step(role="tool", tool_call_id=waiting.pop(0) if waiting else f"sharegpt_orphan_{i}", text=value)
            )
        else:
            return f"turn {i} has unknown speaker {who!r}"
    notes.append("openai_chat: ShareGPT turns mapped to chat roles")
    return steps


class OpenAIChatReader(BaseTraceReader):
    """Reads OpenAI chat JSON/JSONL and ShareGPT conversation files (see the module docstring for layouts)."""

    name = FORMAT

    def detect(self, path: Path) -> bool:
        try:
            if not path.is_file():
                return False
            head = sniff(path).lstrip()
            if head.startswith(b"["):
                m = _FIRST_KEY.match(head)
                if m is None or m.group(1) not in _CHAT_KEYS:
                    return False  # e.g. an OpenHands event list starts with "id"/"source"
                return (b'"role"' in head and b'"content"' in head) or (
                    b'"conversations"' in head and b'"from"' in head
                )
            if head.startswith(b"{"):
                first = first_json_line(path)
                if isinstance(first, dict):
                    return _is_conversation(first)
                return b'"messages"' in head[:4096] and b'"role"' in head
            return False
        except Exception:  # noqa: BLE001 - detect must never raise
            return False

    def read_file(self, path: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        first = first_json_line(path)
        whole = None
        if first is None or not isinstance(first, dict) or not _is_conversation(first):
            whole = self.load_document(path, sha)
        elif path.suffix != ".jsonl":
            # one object on the first line may still be a whole single-line document: try the document first
            doc = self.load_document(path, sha)
            whole = doc if not isinstance(doc, Rejection) else None
        if whole is not None:
            if isinstance(whole, Rejection):
                yield whole
                return
            yield from self._document(path, sha, whole)
            return
        for item in self.json_lines(path, sha):
            if isinstance(item, Rejection):
                yield item
                continue
            yield self._one(path, sha, item.value, key=f"line{item.lineno}", line=item.lineno)

    def _document(self, path: Path, sha: str, doc: Any) -> Iterator[Trajectory | Rejection]:
        if isinstance(doc, list) and doc and all(_is_message(m) for m in doc):
            yield self._one(path, sha, {"messages": doc}, key="doc", line=None)
            return
        if isinstance(doc, dict):
            yield self._one(path, sha, doc, key="doc", line=None)
            return
        if isinstance(doc, list) and doc:
            for i, conv in enumerate(doc):
                yield self._one(
                    path,
                    sha,
                    conv if not isinstance(conv, list) else {"messages": conv},
                    key=f"item{i}",
                    line=None,
                    index=i,
                )
            return
        yield self.reject(
            path,
            sha,
            Reason.empty if doc == [] else Reason.parse_error,
            "no conversations in the document",
            "pass a message list or a list of conversations",
        )

    def _one(
        self, path: Path, sha: str, conv: Any, *, key: str, line: int | None, index: int | None = None
    ) -> Trajectory | Rejection:
        where = f"conversation {index}" if index is not None else "conversation"
        rid_key = f"{key}"

        def bad(reason: Reason, detail: str, hint: str) -> Rejection:
            return self.reject(
                path,
                sha,
                reason,
                f"{where}: {detail}",
                hint,
                line=line,
                record_id=content_id("traj", FORMAT, sha, rid_key),
            )

        if not isinstance(conv, dict) or not _is_conversation(conv):
            return bad(
                Reason.parse_error,
                "not a message list, {messages} or {conversations} object",
                'give each conversation as {"messages": [...]}',
            )
        notes: list[str] = []
        if isinstance(conv.get("messages"), list):
            messages = conv["messages"]
            answer = _completion_answer(conv.get("response"))
            if answer is not None:
                messages = [*messages, answer]
                notes.append("openai_chat: completion log: the response is the last assistant turn")
            steps = _openai_steps(messages, notes)
        else:
            got = _sharegpt_steps(conv["conversations"], notes)
            if isinstance(got, str):
                return bad(Reason.parse_error, got, "use from = human/gpt/function_call/observation/system")
            steps = got
            if isinstance(conv.get("system"), str) and conv["system"]:
                steps.insert(0, Step(role="system", text=conv["system"]))
        if not steps:
            return bad(Reason.empty, "no messages", "drop the empty conversation")
        declared, problem = _declared_tools(conv.get("tools"))
        if problem:
            return bad(Reason.parse_error, problem, "tools must be a list of tool schemas (or its JSON text)")
        foreign = sorted(set(declared) - PI_TOOL_NAMES)
        called = any(s.tool_calls for s in steps)
        if foreign and not called:
            return bad(
                Reason.unsupported_tool,
                f"declares tools Pi lacks ({', '.join(foreign)}); none is called, but the answers were written with "
                "them on offer",
                "keep only conversations whose tool list is Pi's read/bash/edit/write (or that declare no tools)",
            )
        if declared:
            notes.append(f"openai_chat: declared tools {','.join(sorted(set(declared)))}")
        flags = []
        if foreign:  # every answer was written with these on offer: the gate keeps no label of it
            flags.append("foreign_tools")
            notes.append(f"foreign_tools:{','.join(foreign)}")
        return self.trajectory(
            path, sha, key=rid_key, steps=steps, line_start=line, line_end=line, transformations=notes, flags=flags
        )
