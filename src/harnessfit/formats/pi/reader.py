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
from pathlib import Path
from typing import Any

from harnessfit.core.ids import content_id
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.base import BaseTraceReader
from harnessfit.formats.pi.entries import (
    BRANCH_PREFIX,
    BRANCH_SUFFIX,
    COMPACTION_PREFIX,
    COMPACTION_SUFFIX,
    Node,
    call_arguments,
    context,
    sent_arguments,
)
from harnessfit.formats.reading import first_json_line

__all__ = [
    "PiReader",
    "side_branch_span",
    "call_arguments",
    "sent_arguments",
    "COMPACTION_PREFIX",
    "COMPACTION_SUFFIX",
    "BRANCH_PREFIX",
    "BRANCH_SUFFIX",
]


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
                yield self.reject(
                    path,
                    sha,
                    Reason.parse_error,
                    f"line {item.lineno}: not a JSON object",
                    "each line must be one session entry object",
                    line=item.lineno,
                )
                continue
            if value.get("type") == "session" and header is None:
                header = value
                continue
            entries.append((item.lineno, value))
        if header is None or not entries:
            yield self.reject(
                path,
                sha,
                Reason.empty,
                "session has no header or no entries",
                "a Pi session needs its header line and at least one message",
            )
            return
        version = header.get("version") if isinstance(header.get("version"), int) else 1
        nodes, notes = _migrate(version, entries)
        if not nodes:
            yield self.reject(
                path,
                sha,
                Reason.empty,
                "session has no entries besides headers",
                "a Pi session needs at least one message",
            )
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
                yield self.reject(
                    path,
                    sha,
                    Reason.side_branch,
                    f"a side branch of the session tree (lines {min(a, b)}-{max(a, b)}; Pi replays only "
                    "the active branch)",
                    "open the branch in Pi and export it as its own session",
                    line_start=min(a, b),
                    line_end=max(a, b),
                    record_id=content_id("traj", self.name, sha, f"leaf:{leaf}"),
                )  # the id it always had
                continue
            back = _cycle(leaf, by_id)
            if back is not None:  # Pi's buildSessionPath would walk this chain forever: Pi cannot open the file
                yield self.reject(
                    path,
                    sha,
                    Reason.parent_cycle,
                    f"the parentId chain from the last entry (line {by_id[leaf].lineno}) comes back to "
                    f"line {back}: Pi cannot build this session's path, so it cannot load it",
                    "repair the parentId links (each entry's parent must come before it)",
                    line_start=back,
                    line_end=by_id[leaf].lineno,
                )
                continue
            path_nodes = _path(leaf, by_id)
            on_active.update(node.eid for node in path_nodes)
            yield from self._epochs(path, sha, leaf, path_nodes, notes, flags_common, cwd, date)

    def _epochs(
        self,
        path: Path,
        sha: str,
        leaf: str,
        path_nodes: list[Node],
        notes: list[str],
        flags_common: list[str],
        cwd: str | None,
        date: str | None,
    ) -> Iterator[Trajectory]:
        """One trajectory per compaction epoch of the active path (the module docstring's **Compaction**)."""
        compactions = [i for i, node in enumerate(path_nodes) if node.entry.get("type") == "compaction"]
        ends = [*compactions, len(path_nodes)]  # epoch k is the path up to (not including) compaction k+1
        root: str | None = None
        for epoch, end in enumerate(ends):
            prefix = path_nodes[:end]
            if epoch and end == compactions[epoch - 1] + 1 and not self.unanswered_epochs:
                continue  # nothing after this compaction: its context was never answered (epoch - 1 has it all)
            steps, transformations = context(prefix)
            transformations = [*notes, *transformations]
            lines = [node.lineno for node in prefix]
            flags = list(flags_common)
            last = epoch == len(ends) - 1
            key = f"leaf:{leaf}" if last else f"leaf:{leaf}:epoch:{epoch}"
            traj = self.trajectory(
                path,
                sha,
                key=key,
                steps=steps,
                cwd=cwd,
                date=date,
                flags=flags,
                line_start=min(lines) if lines else None,
                line_end=max(lines) if lines else None,
                transformations=transformations,
            )
            if root is None:
                root = traj.root_request_id
            else:
                traj.root_request_id = root  # every epoch of a session stays in the same split
            yield traj


def _migrate(version: int, entries: list[tuple[int, dict[str, Any]]]) -> tuple[list[Node], list[str]]:
    """The entries as tree nodes after Pi's ``migrateToCurrentVersion`` (see the module docstring)."""
    notes: list[str] = []
    nodes: list[Node] = []
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
            nodes.append(Node(eids[k], prev, lineno, entry))
            prev = eids[k]
    else:
        for k, (lineno, entry) in enumerate(entries):
            if entry.get("type") == "session":
                continue  # _buildIndex skips header lines
            eid = entry.get("id")
            if not isinstance(eid, str) or not eid:
                eid = f"#{k}"
            parent = entry.get("parentId")
            nodes.append(Node(eid, parent if isinstance(parent, str) else None, lineno, entry))
    if version < 3:
        for node in nodes:
            msg = node.entry.get("message")
            if node.entry.get("type") == "message" and isinstance(msg, dict) and msg.get("role") == "hookMessage":
                node.entry = {**node.entry, "message": {**msg, "role": "custom"}}  # migrateV2ToV3
    return nodes, notes


def _cycle(leaf: str, by_id: dict[str, Node]) -> int | None:
    """The line of the entry where the walk from ``leaf`` up its ``parentId`` chain meets itself again, or None."""
    seen: set[str] = set()
    cur: str | None = leaf
    while cur is not None and cur in by_id:
        if cur in seen:
            return by_id[cur].lineno
        seen.add(cur)
        cur = by_id[cur].parent
    return None


def _path(leaf: str, by_id: dict[str, Node]) -> list[Node]:
    """Root → ``leaf`` by ``parentId`` (``buildSessionPath``; a cycle ends the walk)."""
    out: list[Node] = []
    seen: set[str] = set()
    cur: str | None = leaf
    while cur is not None and cur in by_id and cur not in seen:
        seen.add(cur)
        out.append(by_id[cur])
        cur = by_id[cur].parent
    out.reverse()
    return out
