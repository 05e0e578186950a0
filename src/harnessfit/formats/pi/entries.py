"""What Pi sends for a path of session entries: each entry kind as Pi turns it into messages
(``sessionEntryToContextMessages`` + ``convertToLlm`` in the coding agent's ``core/messages.js``), the compaction
summary and kept entries of ``buildContextEntries``, and context edits (``projectContextEntry``), as ``Step``s. The
rules are listed in ``formats.pi.reader``'s docstring; the reader walks the session tree and calls ``context``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from harnessfit.core.trajectory import Step, ToolCall
from harnessfit.harness.pi_results import bash_user_text

__all__ = [
    "BRANCH_PREFIX",
    "BRANCH_SUFFIX",
    "COMPACTION_PREFIX",
    "COMPACTION_SUFFIX",
    "CONTEXT_ONLY_ENTRY",
    "Node",
    "call_arguments",
    "context",
    "context_only_target",
    "sent_arguments",
    "system_text",
]

COMPACTION_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUFFIX = "\n</summary>"
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUFFIX = "</summary>"


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []  # null/missing content is [] (sessionEntryToContextMessages, 0.82+)


def _user_step(content: Any, **meta: Any) -> Step:
    """A user message from ``content`` (a string or a block list): one part per text block, images counted."""
    blocks = _blocks(content)
    parts = [b.get("text") if isinstance(b.get("text"), str) else "" for b in blocks if b.get("type") == "text"]
    images = sum(1 for b in blocks if b.get("type") == "image")
    extra = {"content_string": True} if isinstance(content, str) else {}
    return Step(role="user", text="\n".join(parts), images=images, meta={"parts": parts, **extra, **meta})


def _wrapped(text: str, **meta: Any) -> Step:
    return Step(role="user", text=text, meta={"parts": [text], **meta})


_RECEIVED = "\n\nReceived arguments:\n"


def call_arguments(block: dict[str, Any]) -> Any:
    """A tool call's arguments as the model sent them. Pi 1.x stores text it could not parse into an object as
    ``arguments: {}`` plus ``argumentsError: "<reason>\\n\\nReceived arguments:\\n<text as sent>"`` (pi-ai
    ``parseToolCallArguments``); the text as sent is the call (the converter decides, as for any string)."""
    error = block.get("argumentsError")
    if isinstance(error, str) and _RECEIVED in error:
        return error.split(_RECEIVED, 1)[1]
    return block.get("arguments")


def sent_arguments(block: dict[str, Any]) -> Any:
    """A session's tool call arguments as Pi took them from the model, in one form for every version: Pi 0.x stores
    the parsed value (a JSON string that holds an object stays a string); 1.x stores ``{}`` and the text it could not
    parse as an object in ``argumentsError`` (``call_arguments``), which decoded once is that same value. What eval
    scores and the report shows (double encoding stays visible)."""
    args = call_arguments(block)
    if isinstance(args, str) and isinstance(block.get("argumentsError"), str):
        try:
            return orjson.loads(args)
        except orjson.JSONDecodeError:
            return args
    return args


def _assistant_step(msg: dict[str, Any]) -> Step:
    blocks = _blocks(msg.get("content"))
    ordered: list[list[str]] = []
    for b in blocks:
        if b.get("type") == "text" and isinstance(b.get("text"), str):
            ordered.append(["text", b["text"]])
        elif b.get("type") == "thinking" and isinstance(b.get("thinking"), str) and not b.get("redacted"):
            ordered.append(["thinking", b["thinking"]])  # redacted thinking never reaches another model
    text = "".join(t for k, t in ordered if k == "text" and t.strip())
    thinking = [t for k, t in ordered if k == "thinking" and t.strip()]
    calls = [
        ToolCall(id=str(b.get("id") or ""), name=str(b.get("name") or ""), arguments=call_arguments(b))
        for b in blocks
        if b.get("type") == "toolCall"
    ]
    return Step(
        role="assistant",
        text=text or None,
        reasoning="\n".join(thinking) or None,
        tool_calls=calls,
        stop_reason=msg.get("stopReason"),
        meta={"model": msg.get("model"), "provider": msg.get("provider"), "blocks": ordered},
    )


def system_text(msg: dict[str, Any]) -> str:
    """The text of a Pi 1.x ``system`` message as pi-ai's ``getSystemMessageText`` makes it: the content's text
    parts, then every non-null section, non-empty parts joined by a blank line (the prompt lives in ``sections``)."""
    parts = [b.get("text") or "" for b in _blocks(msg.get("content")) if b.get("type") == "text"]  # contentText
    sections = msg.get("sections") if isinstance(msg.get("sections"), dict) else {}
    return "\n\n".join(p for p in ["\n".join(parts), *(v for v in sections.values() if isinstance(v, str))] if p)


def _system_step(msg: dict[str, Any]) -> Step:
    """A ``system`` message (Pi 1.x keeps the system prompt in the session: ``content`` plus named ``sections``, and
    ``toolsAdded``/``toolsRemoved`` declarations). Its text is ``system_text``; the converter replaces it with the
    card's prompt."""
    sections = msg.get("sections") if isinstance(msg.get("sections"), dict) else {}
    text = system_text(msg)
    added = [t for t in msg.get("toolsAdded") or [] if isinstance(t, dict)]
    # the tools' parameters as Pi declared them: with the prompt, what tells which Pi wrote the session
    # (harness.recorded.recorded_pi_versions)
    params = {str(t.get("name")): t["parameters"] for t in added if isinstance(t.get("parameters"), dict)}
    return Step(
        role="system",
        text=text,
        meta={
            "sections": list(sections),
            "tools_added": [t.get("name") for t in added],
            "tools_removed": list(msg.get("toolsRemoved") or []),
            "tool_parameters": params,
        },
    )


def _message_steps(msg: dict[str, Any], notes: list[str]) -> list[Step]:
    """One stored message as the messages ``convertToLlm`` makes of it (none for a role it does not know)."""
    role = msg.get("role")
    if role == "user":
        return [_user_step(msg.get("content"))]
    if role == "assistant":
        return [_assistant_step(msg)]
    if role == "toolResult":
        blocks = _blocks(msg.get("content"))
        return [
            Step(
                role="tool",
                tool_call_id=str(msg.get("toolCallId") or ""),
                tool_name=msg.get("toolName"),
                text="\n".join(b.get("text") or "" for b in blocks if b.get("type") == "text"),
                is_error=bool(msg.get("isError")),
                images=sum(1 for b in blocks if b.get("type") == "image"),
            )
        ]
    if role == "system":
        return [_system_step(msg)]
    if role == "bashExecution":
        if msg.get("excludeFromContext"):
            notes.append("pi.bash_excluded_from_context")
            return []
        full = msg.get("fullOutputPath") if msg.get("truncated") else None
        text = bash_user_text(
            str(msg.get("command") or ""),
            str(msg.get("output") or ""),
            msg.get("exitCode"),
            bool(msg.get("cancelled")),
            full_output_path=full if isinstance(full, str) else None,
        )
        notes.append("pi.bashExecution->user_text")
        return [_wrapped(text, bash_execution=True)]
    if role == "custom":
        return [_user_step(_as_blocks(msg.get("content")), custom=True)]
    if role == "branchSummary":
        return [_wrapped(BRANCH_PREFIX + _js_text(msg, "summary") + BRANCH_SUFFIX, branch_summary=True)]
    if role == "compactionSummary":
        return [_wrapped(COMPACTION_PREFIX + _js_text(msg, "summary") + COMPACTION_SUFFIX, compaction_summary=True)]
    notes.append(f"pi.unknown_role_dropped:{role}")
    return []


def _js_text(obj: dict[str, Any], key: str) -> str:
    """``obj[key]`` as JavaScript's string concatenation shows it (a missing key is ``undefined``)."""
    if key not in obj:
        return "undefined"
    value = obj[key]
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _as_blocks(content: Any) -> Any:
    """``convertToLlm`` turns a custom message's string content into one text block (it is never sent as a string)."""
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


CONTEXT_ONLY_ENTRY = "harnessfit.context_only"
"""``customType`` of the custom entry (Pi's ``CustomEntry``, which sends nothing to the model) that marks an assistant
message as context only: ``data`` is ``{"targetId": <the message entry's id>, "why": <one line>}``. ``harnessfit
synth`` writes it after a deliberate mistake it planted (a retry session's failed edit): the turns after it learn the
recovery, the mistake itself is never a label."""


def context_only_target(entry: dict[str, Any]) -> tuple[str, str] | None:
    """(target entry id, why) when ``entry`` is a context-only marker (``CONTEXT_ONLY_ENTRY``), else ``None``."""
    if entry.get("type") != "custom" or entry.get("customType") != CONTEXT_ONLY_ENTRY:
        return None
    data = entry.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("targetId"), str):
        return None
    why = data.get("why")
    return data["targetId"], why if isinstance(why, str) and why else "marked context only"


@dataclass
class Node:
    """One session entry after migration: its id, parent id, line and the entry itself."""

    eid: str
    parent: str | None
    lineno: int
    entry: dict[str, Any]


def context(path_nodes: list[Node]) -> tuple[list[Step], list[str]]:
    """The messages Pi builds from one root→leaf path (``buildContextEntries`` + ``projectContextEntry`` +
    ``convertToLlm``), as steps."""
    notes: list[str] = []
    compaction = next(
        (i for i in range(len(path_nodes) - 1, -1, -1) if path_nodes[i].entry.get("type") == "compaction"), None
    )
    selected: list[tuple[Node, str]] = []  # (node, "summary" | "kept" | "after")
    if compaction is None:
        selected = [(node, "after") for node in path_nodes]
    else:
        comp = path_nodes[compaction]
        selected.append((comp, "summary"))
        first_kept = comp.entry.get("firstKeptEntryId")
        found = False
        for node in path_nodes[:compaction]:
            found = found or node.eid == first_kept
            if found:
                selected.append((node, "kept"))
        selected += [(node, "after") for node in path_nodes[compaction + 1 :]]
        notes.append("pi.compaction_applied")
    edits: dict[str, Any] = {}
    marked: dict[str, str] = {}
    for node, _ in selected:
        if node.entry.get("type") == "context_edit" and isinstance(node.entry.get("targetId"), str):
            edits[node.entry["targetId"]] = node.entry.get("replacement")
        target = context_only_target(node.entry)
        if target is not None:
            marked[target[0]] = target[1]
    steps: list[Step] = []
    for node, role in selected:
        entry_steps = _entry_steps(node, role, notes)
        if node.eid in edits:
            entry_steps = _edited(entry_steps, edits[node.eid], notes)
        if role in ("summary", "kept"):
            for s in entry_steps:
                s.meta["history_only"] = True
        if node.eid in marked:
            for s in entry_steps:
                if s.role == "assistant":
                    s.meta["context_only"] = marked[node.eid]
            if "pi.context_only_marked" not in notes:
                notes.append("pi.context_only_marked")
        steps += entry_steps
    return steps, notes


def _entry_steps(node: Node, role: str, notes: list[str]) -> list[Step]:
    """``sessionEntryToContextMessages`` + ``convertToLlm`` for one selected entry."""
    entry = node.entry
    kind = entry.get("type")
    if kind == "message" and isinstance(entry.get("message"), dict):
        msg = entry["message"]
        if role == "kept" and msg.get("role") == "system":
            return []  # 1.x keeps no system message from before a compaction (buildContextEntries)
        return _message_steps(msg, notes)
    if kind == "custom_message":
        return [_user_step(_as_blocks(entry.get("content")), custom=True)]
    if kind == "branch_summary" and entry.get("summary"):
        return [_wrapped(BRANCH_PREFIX + str(entry["summary"]) + BRANCH_SUFFIX, branch_summary=True)]
    if kind == "compaction":
        summary = _wrapped(COMPACTION_PREFIX + _js_text(entry, "summary") + COMPACTION_SUFFIX, compaction_summary=True)
        if role != "summary":
            summary.meta["nested_compaction"] = True  # an older compaction inside the kept range
            return [summary]
        system = entry.get("systemMessage")
        return [_system_step(system), summary] if isinstance(system, dict) else [summary]
    return []


def _edited(steps: list[Step], replacement: Any, notes: list[str]) -> list[Step]:
    """``projectContextEntry``: ``null`` leaves the entry out; otherwise its content is replaced (a string becomes one
    text block for assistant and tool messages, the role and everything else stay)."""
    notes.append("pi.context_edit_applied")
    if replacement is None:
        return []
    if not isinstance(replacement, dict):
        return steps
    content = replacement.get("content")
    out: list[Step] = []
    for s in steps:
        if s.role == "assistant":
            out.append(
                _assistant_step(
                    {
                        "content": content,
                        "stopReason": s.stop_reason,
                        "model": s.meta.get("model"),
                        "provider": s.meta.get("provider"),
                    }
                )
            )
        elif s.role == "tool":
            blocks = _blocks(content)
            out.append(
                s.model_copy(
                    update={
                        "text": "\n".join(b.get("text") or "" for b in blocks if b.get("type") == "text"),
                        "images": sum(1 for b in blocks if b.get("type") == "image"),
                    }
                )
            )
        elif s.role == "user":
            meta = {k: v for k, v in s.meta.items() if k not in ("parts", "content_string")}
            out.append(_user_step(content if not s.meta.get("custom") else _as_blocks(content), **meta))
        else:
            out.append(s)
    return out
