"""Codex CLI rollouts (``~/.codex/sessions/[YYYY/MM/DD/]rollout-*.jsonl``, or the TypeScript CLI's ``.json``) into
trajectories, one per context *epoch*.

Every layout the CLI has written is read (``codex.layouts``: the ``{timestamp, type, payload}`` envelope, the 2025
bare-item JSONL with its session-meta first line and ``record_type`` lines, the TypeScript CLI's JSON document).
Only response items are the conversation (``codex.items`` turns them into steps); ``event_msg`` records repeat user
and agent messages for the UI (reading both would count every message twice), so they are counted and ignored, except
``thread_rolled_back``. The session meta and ``turn_context`` give the working directory, the date, the repository and
the CLI version.

**What the model saw** (Codex's own replay of a rollout, ``reconstruct_history_from_rollout``):

- a ``compacted`` record with ``replacement_history`` replaces the whole context by those items. A new epoch starts:
  its own trajectory, whose first steps are the replacement items marked ``history_only`` (never labels: the model
  wrote none of them in that context), followed by what came next. An epoch nothing followed is not yielded.
- a ``compacted`` record without ``replacement_history`` (older versions) made Codex rebuild the context from the
  user messages and the summary with a version-specific template the rollout does not hold; a replacement history
  or an inline ``compaction`` item holding an encrypted summary is unreadable. Either way the context after it is
  unknown: the trajectory ends there, and the calls after it are counted in ``Trajectory.skipped_calls`` under
  ``context_not_rebuilt`` (``core.trajectory.CONTEXT_NOT_REBUILT``) until a later compaction with a readable
  replacement history starts a new epoch.
- ``event_msg`` ``thread_rolled_back {num_turns}`` drops the last ``num_turns`` user turns (all of them when there
  are fewer; none when there is no user turn): a new epoch starts with the steps before the dropped turns, marked
  ``history_only``.

Sub-agents (``session_meta.source.subagent``): a rollout a parent's ``spawn_agent`` call started (``thread_spawn``,
naming ``parent_thread_id``) is a whole agent conversation whose user message is the ``message`` the parent wrote
(after the injected AGENTS.md/environment items every rollout opens with): a trajectory like any, noted
``subagent_of:codex:<parent thread>``; a rollout that calls ``spawn_agent`` notes ``session:codex:<its thread>``, so
the build's grouped split puts its sub-agents' rollouts in its split (``core.ids.session_links``). The parent's
``spawn_agent``/``wait_agent`` calls stay what the mapping rejects.
Review, compaction, memory and other internal sub-agents run a prompt Codex wrote: flagged ``subagent``.

Epochs share the first epoch's ``root_request_id``, so a split never separates them; the last epoch keeps the plain
key, so a rollout without compaction or rollback has the ids it always had. Tool calls keep Codex's own names and raw
argument strings; ``harnessfit.formats.codex.mapping`` maps them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessfit.core.ids import SESSION_NOTE, SUBAGENT_OF_NOTE
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import CONTEXT_NOT_REBUILT, Step, Trajectory
from harnessfit.formats.base import BaseTraceReader
from harnessfit.formats.codex.items import CALL_TYPES, COMPACTION_TYPES, INJECTED_PREFIXES, StepBuilder, count
from harnessfit.formats.codex.layouts import Record, detect_layout, records

__all__ = ["CodexReader", "INJECTED_PREFIXES"]

FORMAT = "codex"


@dataclass
class _Epoch:
    """One context: its steps (the first ``seeded`` are history only), where a hole starts, its lines, and the calls
    skipped after the context became unknown."""

    builder: StepBuilder
    seeded: int = 0
    lost_at: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    skipped: int = 0

    @property
    def steps(self) -> list[Step]:
        return self.builder.steps


class _Rollout:
    """Walks the records of one rollout: session facts, and the epochs of its context."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.flags: set[str] = set()
        self.notes: list[str] = []  # facts of the session meta, into every epoch's transformations
        self.thread: str | None = None
        self.cwd: str | None = None
        self.date: str | None = None
        self.repository: str | None = None
        self.version: str | None = None
        self.output_meta: dict[str, Any] = {}
        self.epochs: list[_Epoch] = []
        self.cur = _Epoch(self._builder())
        self.stopped = False

    def _builder(self) -> StepBuilder:
        return StepBuilder(self.counts, self.flags, self.output_meta)

    # ------------------------------------------------------------------ session facts
    def meta(self, payload: dict[str, Any], timestamp: Any) -> None:
        self.cwd = self.cwd or (payload.get("cwd") if isinstance(payload.get("cwd"), str) else None)
        ts = payload.get("timestamp") if isinstance(payload.get("timestamp"), str) else timestamp
        if self.date is None and isinstance(ts, str) and len(ts) >= 10:
            self.date = ts[:10]
        git = payload.get("git")
        if isinstance(git, dict) and isinstance(git.get("repository_url"), str):
            self.repository = git["repository_url"]
        if isinstance(payload.get("id"), str):
            self.thread = self.thread or payload["id"]
        if isinstance(payload.get("cli_version"), str):
            self.version = payload["cli_version"]
        source = payload.get("source")
        if isinstance(source, dict) and "subagent" in source:
            self.subagent(source["subagent"])

    def subagent(self, sub: Any) -> None:
        """A sub-agent's rollout (``SessionSource::SubAgent``). One a ``spawn_agent`` call started
        (``thread_spawn``) opens with the message its parent wrote: a trajectory like any, noting its parent thread.
        Review, compaction, memory and other sub-agents run a prompt Codex itself wrote: flagged ``subagent``."""
        spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
        if isinstance(spawn, dict):
            parent = spawn.get("parent_thread_id")
            if isinstance(parent, str):
                self.notes.append(f"{SUBAGENT_OF_NOTE}{FORMAT}:{parent}")
            return
        kind = sub if isinstance(sub, str) else next(iter(sub), "?") if isinstance(sub, dict) and sub else "?"
        self.flags.add("subagent")
        self.notes.append(f"subagent:a Codex {kind} sub-agent (its prompt is Codex's own, not a parent's request)")

    def turn_context(self, payload: dict[str, Any]) -> None:
        if self.cwd is None and isinstance(payload.get("cwd"), str):
            self.cwd = payload["cwd"]
        if isinstance(payload.get("current_date"), str) and self.date is None:
            self.date = payload["current_date"]

    # ------------------------------------------------------------------ records
    def record(self, rec: Record) -> None:
        kind, payload = rec.kind, rec.payload
        if kind == "session_meta":
            if rec.layout == "ts_json":  # its shell outputs are `stdout || stderr` (handle-exec-command.ts)
                self.output_meta["codex_output"] = "stdout_or_stderr"
            self.meta(payload, rec.timestamp)
        elif kind == "turn_context":
            self.turn_context(payload)
        elif kind == "event_msg":
            if payload.get("type") == "thread_rolled_back" and not self.stopped:
                self.rollback(payload.get("num_turns"), rec.lineno)
            else:
                count(self.counts, f"event_msg_{payload.get('type')}_ignored")
        elif kind == "compacted":
            self.compacted(payload, rec)
        elif kind == "response_item":
            self.response_item(payload, rec)
        else:
            count(self.counts, kind if kind.endswith("_ignored") else f"envelope_{kind}_ignored")

    def response_item(self, payload: dict[str, Any], rec: Record) -> None:
        ptype = payload.get("type")
        if self.stopped:
            if ptype in CALL_TYPES:
                self.cur.skipped += 1
            count(self.counts, "item_in_unrebuilt_context_skipped")
            return
        if ptype in COMPACTION_TYPES:
            count(self.counts, f"response_item_{ptype}_encrypted")
            self.stop()
            return
        epoch = self.cur
        epoch.builder.item(payload, rec.index)
        epoch.line_start = epoch.line_start or rec.lineno
        epoch.line_end = rec.lineno

    def lost(self) -> None:
        """A bad record: the current context has a hole from here on."""
        if not self.stopped and self.cur.lost_at is None:
            self.cur.lost_at = len(self.cur.steps)

    # ------------------------------------------------------------------ context changes
    def stop(self) -> None:
        """The context from here on is unknown: nothing is added until a readable replacement history."""
        self.stopped = True
        count(self.counts, "context_not_rebuilt")

    def _start(self, seed: list[Step], lineno: int, lost_at: int | None) -> None:
        for step in seed:
            step.meta["history_only"] = True
        self.epochs.append(self.cur)
        builder = self._builder()
        builder.steps = seed
        self.cur = _Epoch(builder, seeded=len(seed), lost_at=lost_at, line_start=lineno, line_end=lineno)
        self.stopped = False

    def compacted(self, payload: dict[str, Any], rec: Record) -> None:
        history = payload.get("replacement_history")
        if not isinstance(history, list):
            count(self.counts, "compacted_without_replacement_history")
            self.stop()
            return
        if any(isinstance(i, dict) and i.get("type") in COMPACTION_TYPES for i in history):
            count(self.counts, "compacted_with_encrypted_summary")
            self.stop()
            return
        count(self.counts, "compacted_replacement_history")
        builder = self._builder()
        for item in history:
            if isinstance(item, dict):
                builder.item(item, rec.index)
        self._start(builder.steps, rec.lineno, None)

    def rollback(self, num_turns: Any, lineno: int) -> None:
        users = [i for i, s in enumerate(self.cur.steps) if s.role == "user"]
        if not isinstance(num_turns, int) or isinstance(num_turns, bool) or num_turns <= 0 or not users:
            count(self.counts, "thread_rolled_back_without_effect")
            return
        count(self.counts, "thread_rolled_back")
        cut = users[-num_turns] if num_turns <= len(users) else users[0]
        seed = [s.model_copy(deep=True) for s in self.cur.steps[:cut]]
        lost = self.cur.lost_at
        self._start(seed, self.cur.line_start or lineno, None if lost is None else min(lost, cut))
        self.cur.line_end = lineno

    def finished(self) -> list[_Epoch]:
        """Every epoch worth a trajectory: each that got more than its seed (or skipped calls); the first epoch when
        none did, so that an empty rollout is still one record."""
        every = [*self.epochs, self.cur]
        return [e for e in every if len(e.steps) > e.seeded or e.skipped] or every[:1]


class CodexReader(BaseTraceReader):
    """Reads Codex CLI rollouts in every layout (``codex.layouts``) into one trajectory per context epoch."""

    name = FORMAT

    def detect(self, path: Path) -> bool:
        try:
            return detect_layout(path) is not None
        except Exception:  # noqa: BLE001 - detect must never raise
            return False

    def read_file(self, path: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        r = _Rollout()
        lost = False
        first_line = last_line = None
        for rec in records(self.json_lines(path, sha)):
            if isinstance(rec, Rejection):
                lost = True
                r.lost()
                yield rec
                continue
            first_line = first_line or rec.lineno
            last_line = rec.lineno
            r.record(rec)
        if first_line is None:
            if not lost:
                yield self.reject(path, sha, Reason.empty, "no JSON lines", "re-export the rollout")
            return
        epochs = r.finished()
        if not any(s.role in ("user", "assistant") for e in epochs for s in e.steps) and not any(
            e.skipped for e in epochs
        ):  # skipped calls need their trajectory, to be counted
            yield self.reject(
                path,
                sha,
                Reason.empty,
                "rollout has no user or assistant messages",
                "nothing to train on: drop the file",
                line_start=first_line,
                line_end=last_line,
            )
            return
        yield from self._trajectories(path, sha, r, epochs, (first_line, last_line))

    def _trajectories(
        self, path: Path, sha: str, r: _Rollout, epochs: list[_Epoch], lines: tuple[int, int | None]
    ) -> Iterator[Trajectory]:
        spawns = any(c.name == "spawn_agent" for e in epochs for s in e.steps for c in s.tool_calls)
        own = [f"{SESSION_NOTE}{FORMAT}:{r.thread}"] if spawns and r.thread else []  # its sub-agents name it
        notes = [*own, *r.notes, *(f"codex: {k} x{v}" for k, v in sorted(r.counts.items()))]
        root: str | None = None
        for k, epoch in enumerate(epochs):
            flags = set(r.flags)
            if epoch.lost_at is not None:
                flags.add("lines_lost")
            single = len(epochs) == 1
            traj = self.trajectory(
                path,
                sha,
                key="rollout" if k == len(epochs) - 1 else f"rollout:epoch:{k}",
                steps=epoch.steps,
                cwd=r.cwd,
                date=r.date,
                repository=r.repository,
                source_harness_version=r.version,
                flags=sorted(flags),
                line_start=lines[0] if single else (epoch.line_start or lines[0]),
                line_end=lines[1] if single else (epoch.line_end or lines[1]),
                transformations=notes,
            )
            traj.lost_at = epoch.lost_at
            if epoch.skipped:
                traj.skipped_calls[CONTEXT_NOT_REBUILT] = epoch.skipped
            if root is None:
                root = traj.root_request_id
            else:
                traj.root_request_id = root  # every epoch of a rollout stays in the same split
            yield traj
