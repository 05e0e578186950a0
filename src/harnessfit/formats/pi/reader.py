"""Pi session reader (``~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl``): every layout version, as Pi loads it.

Each rule is Pi's own (``core/session-manager.js`` and ``core/messages.js`` of the coding agent; the same in 0.73.1,
0.79.10, 0.82.0 and 1.6.0 except where said):

- **Migration** (``migrateToCurrentVersion``): a v1 file (header without ``version``: linear, no ids) gets ids and
  parents in file order (``migrateV1ToV2``), and a compaction's ``firstKeptEntryIndex`` — an index into the file's
  entries, the header being 0 — becomes the ``firstKeptEntryId`` of that entry (none when it is the header or out of
  range). Before v3 the message role ``hookMessage`` is ``custom`` (``migrateV2ToV3``).
- **Tree**: the leaf is the file's last entry (``_buildIndex``); the context is the path from the root to it
  (``buildSessionPath``). Every other leaf is a side branch, rejected (``side_branch``) because Pi never replays it;
  it is rejected from its own entries (``side_branch_span``) without building its root→leaf path (building every
  side branch's path cost time quadratic in a regenerated session's length).
- **Compaction** (``buildContextEntries``): on a path with compactions, the latest one is replaced by its summary
  message, followed by the entries from its ``firstKeptEntryId`` up to it and every entry after it. Each compaction
  *epoch* is its own trajectory, the context Pi sent between that compaction and the next: epoch 0 is the path up to
  the first compaction, epoch k the summary of compaction k, what it kept and what followed until compaction k+1
  (none when nothing followed: a context Pi never got an answer to).
  The summary and the kept entries are marked ``history_only``: the model wrote the kept turns before the
  compaction, seeing another context, so they are never labels (``ConversationMeta.labels_from``). All epochs share
  the first epoch's ``root_request_id``, so a split never separates them. An older compaction entry inside the kept
  range is sent as a second summary by Pi 0.80.4–0.86.x only (``sessionEntryToContextMessages`` maps every
  compaction; 1.x skips all but the first, ``buildSessionProjection``): its step has ``meta["nested_compaction"]`` and
  the converter keeps it for those versions (``PiHistory.nested_compaction_summary``).
- **Entries → messages** (``sessionEntryToContextMessages`` + ``convertToLlm``): ``message`` entries by role —
  ``user``, ``assistant``, ``toolResult``, ``system`` (1.x: the prompt kept in the session; replaced by the card's),
  ``bashExecution`` (a user message "Ran `cmd`…" via ``bashExecutionToText``, left out when ``excludeFromContext``),
  ``custom`` (a user message with its content), ``branchSummary``/``compactionSummary`` (user messages with Pi's
  wrappers); any other role is dropped as ``convertToLlm`` drops it. ``custom_message`` entries are user messages,
  ``branch_summary`` entries with a summary are user messages with the branch wrapper; every other entry type
  (``custom``, ``model_change``, ``label``, ``session_info``…) sends nothing. Context edits (``context_edit``, 0.87+:
  the latest edit of an entry replaces its content or, ``null``, leaves it out; ``projectContextEntry``) are applied,
  since the turns after an edit were written seeing the edited context.
- Assistant steps keep their text and thinking blocks in order (``meta["blocks"]``): the converter decides, by the
  card's version, whether another model's thinking is sent as text (``convert.history``). A user message whose
  content is a string is sent as that string (``meta["content_string"]``).
- Assistant turns with ``stopReason`` ``aborted``/``error`` are kept with that stop reason; the converter drops them
  as Pi does on the wire.
- Lines: every layout the JSONL reader reads (``core.jsonl``). One place where that differs from Pi's loader
  (``parseSessionEntries``: one ``JSON.parse`` per line, a line that fails is skipped): a line holding several
  entries, written when a newline was lost, is read as those entries. Pi would drop the line on a resume, but the
  agent that wrote the session had them in its context, and the turns after them were written seeing them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harnessfit.core.ids import content_id
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import BaseTraceReader
from harnessfit.formats.reading import first_json_line
from harnessfit.harness.pi_results import bash_user_text

__all__ = ["PiReader", "side_branch_span", "call_arguments", "sent_arguments", "COMPACTION_PREFIX", "COMPACTION_SUFFIX", "BRANCH_PREFIX", "BRANCH_SUFFIX"]

COMPACTION_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
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


def _system_step(msg: dict[str, Any]) -> Step:
    """A ``system`` message (Pi 1.x keeps the system prompt in the session: ``content`` plus named ``sections``, and
    ``toolsAdded``/``toolsRemoved`` declarations). Its text is pi-ai's ``getSystemMessageText`` (content, then every
    non-null section, non-empty parts joined by a blank line); the converter replaces it with the card's prompt."""
    parts = [b.get("text") or "" for b in _blocks(msg.get("content")) if b.get("type") == "text"]  # contentText
    sections = msg.get("sections") if isinstance(msg.get("sections"), dict) else {}
    text = "\n\n".join(p for p in ["\n".join(parts), *(v for v in sections.values() if isinstance(v, str))] if p)
    added = [t for t in msg.get("toolsAdded") or [] if isinstance(t, dict)]
    # the tools' parameters as Pi declared them: with the prompt, what tells which Pi wrote the session
    # (harness.recorded.recorded_pi_versions)
    params = {str(t.get("name")): t["parameters"] for t in added if isinstance(t.get("parameters"), dict)}
    return Step(role="system", text=text, meta={"sections": list(sections), "tools_added": [t.get("name") for t in added],
                                               "tools_removed": list(msg.get("toolsRemoved") or []),
                                               "tool_parameters": params})


def _message_steps(msg: dict[str, Any], notes: list[str]) -> list[Step]:
    """One stored message as the messages ``convertToLlm`` makes of it (none for a role it does not know)."""
    role = msg.get("role")
    if role == "user":
        return [_user_step(msg.get("content"))]
    if role == "assistant":
        return [_assistant_step(msg)]
    if role == "toolResult":
        blocks = _blocks(msg.get("content"))
        return [Step(
            role="tool",
            tool_call_id=str(msg.get("toolCallId") or ""),
            tool_name=msg.get("toolName"),
            text="\n".join(b.get("text") or "" for b in blocks if b.get("type") == "text"),
            is_error=bool(msg.get("isError")),
            images=sum(1 for b in blocks if b.get("type") == "image"),
        )]
    if role == "system":
        return [_system_step(msg)]
    if role == "bashExecution":
        if msg.get("excludeFromContext"):
            notes.append("pi.bash_excluded_from_context")
            return []
        full = msg.get("fullOutputPath") if msg.get("truncated") else None
        text = bash_user_text(str(msg.get("command") or ""), str(msg.get("output") or ""), msg.get("exitCode"),
                              bool(msg.get("cancelled")), full_output_path=full if isinstance(full, str) else None)
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


@dataclass
class _Node:
    eid: str
    parent: str | None
    lineno: int
    entry: dict[str, Any]


def side_branch_span(leaf: str, parent: dict[str, str | None], on_active: set[str], memo: dict[str, str]) -> str:
    """The first entry of the side branch that ends at ``leaf``: its oldest ancestor not on the active branch (the
    entry right after the fork). ``memo`` is shared by the leaves of one file, so all of them together cost time
    linear in the file's entries; a ``parentId`` cycle or a missing parent ends the walk."""
    chain: list[str] = []
    seen: set[str] = set()
    cur: str | None = leaf
    start = leaf
    while cur is not None and cur not in on_active and cur not in seen:
        if cur in memo:
            start = memo[cur]
            break
        seen.add(cur)
        chain.append(cur)
        start = cur
        cur = parent.get(cur)
        if cur is not None and cur not in parent:  # a parent that is not in the file: the walk ends here
            break
    for eid in chain:
        memo[eid] = start
    return start


class PiReader(BaseTraceReader):
    """Reads Pi session JSONL files (any layout version) into trajectories, one per branch leaf and compaction epoch."""

    name = "pi"

    def __init__(self, *, unanswered_epochs: bool = False) -> None:
        self.unanswered_epochs = unanswered_epochs
        """Also yield an epoch nothing followed (a compaction that is the last entry): the context Pi would send with
        its next request, which no turn answered. Off for conversion (the epoch before holds every turn)."""

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
        version = header.get("version") if isinstance(header.get("version"), int) else 1
        nodes, notes = _migrate(version, entries)
        if not nodes:
            yield self.reject(path, sha, Reason.empty, "session has no entries besides headers",
                              "a Pi session needs at least one message")
            return
        by_id = {n.eid: n for n in nodes}
        children = {n.parent for n in nodes if n.parent is not None}
        active_leaf = nodes[-1].eid
        leaves = [active_leaf] + [n.eid for n in nodes if n.eid not in children and n.eid != active_leaf]
        cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else None
        ts = header.get("timestamp")
        date = ts[:10] if isinstance(ts, str) and len(ts) >= 10 else None
        flags_common = []
        if lost:
            flags_common.append("lines_lost")
        if truncated:
            flags_common.append("truncated")
        parent = {node.eid: node.parent for node in nodes}
        on_active: set[str] = set()
        memo: dict[str, str] = {}
        for n, leaf in enumerate(leaves):
            if n > 0:  # a side branch: one ledger row from its own entries, its path never built
                first = side_branch_span(leaf, parent, on_active, memo)
                a, b = by_id[first].lineno, by_id[leaf].lineno
                yield self.reject(path, sha, Reason.side_branch,
                                  f"a side branch of the session tree (lines {min(a, b)}-{max(a, b)}; Pi replays only "
                                  "the active branch)", "open the branch in Pi and export it as its own session",
                                  line_start=min(a, b), line_end=max(a, b),
                                  record_id=content_id("traj", self.name, sha, f"leaf:{leaf}"))  # the id it always had
                continue
            path_nodes = _path(leaf, by_id)
            on_active.update(node.eid for node in path_nodes)
            compactions = [i for i, node in enumerate(path_nodes) if node.entry.get("type") == "compaction"]
            ends = [*compactions, len(path_nodes)]  # epoch k is the path up to (not including) compaction k+1
            root: str | None = None
            for epoch, end in enumerate(ends):
                prefix = path_nodes[:end]
                if epoch and end == compactions[epoch - 1] + 1 and not self.unanswered_epochs:
                    continue  # nothing after this compaction: its context was never answered (epoch - 1 has it all)
                steps, transformations = _context(prefix)
                transformations = [*notes, *transformations]
                lines = [node.lineno for node in prefix]
                flags = list(flags_common)
                last = epoch == len(ends) - 1
                key = f"leaf:{leaf}" if last else f"leaf:{leaf}:epoch:{epoch}"
                traj = self.trajectory(
                    path, sha, key=key, steps=steps, cwd=cwd, date=date, flags=flags,
                    line_start=min(lines) if lines else None, line_end=max(lines) if lines else None,
                    transformations=transformations,
                )
                if root is None:
                    root = traj.root_request_id
                else:
                    traj.root_request_id = root  # every epoch of a session stays in the same split
                yield traj


def _migrate(version: int, entries: list[tuple[int, dict[str, Any]]]) -> tuple[list[_Node], list[str]]:
    """The entries as tree nodes after Pi's ``migrateToCurrentVersion`` (see the module docstring)."""
    notes: list[str] = []
    nodes: list[_Node] = []
    if version < 2:
        notes.append("pi.session_v1_linear")
        eids = [f"#{k}" for k in range(len(entries))]
        prev: str | None = None
        for k, (lineno, entry) in enumerate(entries):
            if entry.get("type") == "session":
                continue  # migrateV1ToV2 gives header lines no id
            entry = dict(entry)
            if entry.get("type") == "compaction":
                entry.pop("firstKeptEntryId", None)
                index = entry.pop("firstKeptEntryIndex", None)
                # the index counts the file's entries with the header as 0 (entries[k] is file entry k + 1)
                if isinstance(index, int) and not isinstance(index, bool) and 1 <= index <= len(entries):
                    target = entries[index - 1][1]
                    if target.get("type") != "session":
                        entry["firstKeptEntryId"] = eids[index - 1]
                notes.append("pi.v1_compaction_index->id")
            nodes.append(_Node(eids[k], prev, lineno, entry))
            prev = eids[k]
    else:
        for k, (lineno, entry) in enumerate(entries):
            if entry.get("type") == "session":
                continue  # _buildIndex skips header lines
            eid = entry.get("id")
            if not isinstance(eid, str) or not eid:
                eid = f"#{k}"
            parent = entry.get("parentId")
            nodes.append(_Node(eid, parent if isinstance(parent, str) else None, lineno, entry))
    if version < 3:
        for node in nodes:
            msg = node.entry.get("message")
            if node.entry.get("type") == "message" and isinstance(msg, dict) and msg.get("role") == "hookMessage":
                node.entry = {**node.entry, "message": {**msg, "role": "custom"}}  # migrateV2ToV3
    return nodes, notes


def _path(leaf: str, by_id: dict[str, _Node]) -> list[_Node]:
    """Root → ``leaf`` by ``parentId`` (``buildSessionPath``; a cycle ends the walk)."""
    out: list[_Node] = []
    seen: set[str] = set()
    cur: str | None = leaf
    while cur is not None and cur in by_id and cur not in seen:
        seen.add(cur)
        out.append(by_id[cur])
        cur = by_id[cur].parent
    out.reverse()
    return out


def _context(path_nodes: list[_Node]) -> tuple[list[Step], list[str]]:
    """The messages Pi builds from one root→leaf path (``buildContextEntries`` + ``projectContextEntry`` +
    ``convertToLlm``), as steps."""
    notes: list[str] = []
    compaction = next((i for i in range(len(path_nodes) - 1, -1, -1)
                       if path_nodes[i].entry.get("type") == "compaction"), None)
    selected: list[tuple[_Node, str]] = []  # (node, "summary" | "kept" | "after")
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
        selected += [(node, "after") for node in path_nodes[compaction + 1:]]
        notes.append("pi.compaction_applied")
    edits: dict[str, Any] = {}
    for node, _ in selected:
        if node.entry.get("type") == "context_edit" and isinstance(node.entry.get("targetId"), str):
            edits[node.entry["targetId"]] = node.entry.get("replacement")
    steps: list[Step] = []
    for node, role in selected:
        entry_steps = _entry_steps(node, role, notes)
        if node.eid in edits:
            entry_steps = _edited(entry_steps, edits[node.eid], notes)
        if role in ("summary", "kept"):
            for s in entry_steps:
                s.meta["history_only"] = True
        steps += entry_steps
    return steps, notes


def _entry_steps(node: _Node, role: str, notes: list[str]) -> list[Step]:
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
            out.append(_assistant_step({"content": content, "stopReason": s.stop_reason,
                                        "model": s.meta.get("model"), "provider": s.meta.get("provider")}))
        elif s.role == "tool":
            blocks = _blocks(content)
            out.append(s.model_copy(update={"text": "\n".join(b.get("text") or "" for b in blocks
                                                              if b.get("type") == "text"),
                                            "images": sum(1 for b in blocks if b.get("type") == "image")}))
        elif s.role == "user":
            meta = {k: v for k, v in s.meta.items() if k not in ("parts", "content_string")}
            out.append(_user_step(content if not s.meta.get("custom") else _as_blocks(content), **meta))
        else:
            out.append(s)
    return out
