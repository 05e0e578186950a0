"""OpenHands runs into Trajectories: V0 event lists, V0 session folders, V1 SDK conversation folders, and evaluation
output files.

- **V0 event list** (one JSON list): actions and observations are separate events. An observation pairs with its
  action by ``cause`` (the action's event id) or by ``tool_call_metadata.tool_call_id``, else (events stripped of
  ids, as some evaluation outputs are) with the latest action still waiting for one. A tool action's arguments are
  taken from the model response stored in ``tool_call_metadata`` (the raw JSON string the model sent); the assistant
  text is ``args.thought``. Actions from runs without function calling (``run``, ``read``…) become calls named
  ``action:<kind>`` with the event's ``args`` object. Noise (``agent_state_changed``, ``null`` observations,
  recalls) is skipped and counted. A ``message`` event without ``source`` (stripped outputs) is the user's when it is
  the first event, else the agent's only when it waits for a response (``wait_for_response``: OpenHands' agent sets
  it on the messages it ends a turn with; a user message never has it); recorded.
- **V0 session folder** (``sessions/<id>/``: ``events/<N>.json``, one event per file named by its integer id, optional
  ``event_cache/<start>-<end>.json`` pages of 25 events and ``metadata.json``; OpenHands' ``EventStore`` and
  ``storage/locations.py``): the folder is one unit and one trajectory; events are read in id order (numerically:
  ``10.json`` after ``9.json``), an id missing from ``events/`` is taken from its cache page, as the event store does.
- **V1** (a folder: ``base_state.json`` + ``events/event-*.json``, one event per file with a ``kind``): the folder
  is one unit; events are read in file-name order. ``MessageEvent`` / ``ActionEvent`` / ``ObservationEvent`` /
  ``AgentErrorEvent`` carry the conversation. The SDK (``software-agent-sdk``) has written its observations in two
  layouts: up to 1.0.0a5 (``ExecuteBashObservation``, ``FileEditorObservation``…) each class had its own text field
  (``output``; an editor, browser or search ``error`` string the model saw instead; ``content`` as a string for
  think/task tracker; ``message``) and ``error`` (a flag for the terminal, a message elsewhere); from 1.0.0
  (2025-11) every observation has ``content`` (text/image parts) and ``is_error``. A terminal observation's exit code
  is ``exit_code``, which builds before 1.7.0 left null, with the code in ``metadata.exit_code`` (``-1``: still
  running, timed out or not seen to finish; ``metadata.suffix`` is the status line the model saw).
  ``ObservationEvent.extended_content`` (1.34.0) is agent context the model saw after the result. An ``ActionEvent``'s
  raw arguments are ``tool_call.arguments`` (``tool_call.function.arguments`` in builds before 2025-10-02), and
  builds before 2025-09-19 wrote each ``kind`` as a dotted module path. ``events.v1_observation`` reads them all.
- **Evaluation output** (``output.jsonl``: one ``EvalOutput`` per line, written by ``evaluation/utils/shared.py`` with
  ``model_dump_json()``; the resolver's ``ResolverOutput`` has the same ``history``/``instruction``): one trajectory
  per instance. ``history`` is a list of V0 events, a list of ``[action, observation]`` pairs (the older layout,
  ``compatibility_for_eval_history_pairs``), or V1 events (``kind``). When the history holds no user message (V1
  benchmark outputs leave the first message out), the instance's ``instruction`` (the text the harness sent as the
  first user message) is the first user step, recorded.

**Condensation** (V0 ``condensation`` actions, V1 ``Condensation`` events — ``forgotten_event_ids``, an optional
``summary`` and ``summary_offset``, ``openhands/sdk/event/condenser.py``): from then on the model sees the view the
SDK builds from them (``context/view/view.py``: the events not forgotten, the summary inserted), which is not
rebuilt here, so the run's steps end at the first one and every later call is counted as ``context_not_rebuilt``
(``core.trajectory.CONTEXT_NOT_REBUILT``).

``finish`` is how an OpenHands agent ends its turn, not a workspace tool: its message becomes the assistant's final
text and the call and its echo observation are removed (recorded as ``openhands.finish->final_text``; the step keeps
the call's name in ``meta["folded_calls"]`` so the yield accounting still counts it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harnessfit.core.ids import content_id
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import CONTEXT_NOT_REBUILT, Step, Trajectory
from harnessfit.formats.base import BaseTraceReader
from harnessfit.formats.openhands.events import Steps, v0_event, v1_event
from harnessfit.formats.reading import first_json_line, sniff

__all__ = ["OpenHandsReader"]

FORMAT = "openhands"
DEFAULT_CWD = "/workspace"
EVAL_KEYS = frozenset({"instance_id", "instruction", "test_result", "git_patch", "issue"})
_EVENT_FILE = re.compile(r"\A(\d+)\.json\Z")
_CACHE_FILE = re.compile(r"\A(\d+)-(\d+)\.json\Z")


def _looks_like_event(e: Any) -> bool:
    if isinstance(e, list) and len(e) == 2:
        return all(isinstance(x, dict) for x in e)
    return isinstance(e, dict) and ("action" in e or "observation" in e or "kind" in e)


def _is_eval_output(record: Any) -> bool:
    """An evaluation output record: a ``history`` of OpenHands events and an instance's keys."""
    if not isinstance(record, dict) or not isinstance(record.get("history"), list) or not EVAL_KEYS & set(record):
        return False
    history = record["history"]
    return not history or _looks_like_event(history[0])


class OpenHandsReader(BaseTraceReader):
    """Reads OpenHands V0 event lists (one ``.json``) and V1 conversation folders (``base_state.json`` + events)."""

    name = FORMAT

    def detect(self, path: Path) -> bool:
        try:
            if path.is_dir():
                return self._folder_kind(path) is not None
            head = sniff(path).lstrip()
            if self._eval_output(path, head):
                return True
            return (
                head.startswith(b"[")
                and b'"source"' in head
                and (b'"action"' in head or b'"observation"' in head)
                and b'"role"' not in head[:200]
            )
        except Exception:  # noqa: BLE001 - detect must never raise
            return False

    @staticmethod
    def _eval_output(path: Path, head: bytes) -> bool:
        """Evaluation output, by its first record (``reading.first_json_line``: the first line, the first of several
        pretty-printed objects, or the first element of a top-level array — every layout ``json_lines`` reads); an
        OpenHands V0 event list is a top-level array too, whose first element is an event."""
        return head[:1] in (b"{", b"[") and _is_eval_output(first_json_line(path))

    @staticmethod
    def _folder_kind(path: Path) -> str | None:
        """``"v1"`` (base_state.json + events/), ``"v0"`` (events/<N>.json), or ``None``."""
        events = path / "events"
        if not events.is_dir():
            return None
        if (path / "base_state.json").is_file():
            return "v1"
        if any(_EVENT_FILE.match(p.name) for p in events.iterdir() if p.is_file()):
            return "v0"
        return None

    def read_file(self, path: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        if path.is_dir():
            if self._folder_kind(path) == "v0":
                yield from self._read_v0_folder(path, sha)
            else:
                yield from self._read_v1(path, sha)
        elif (head := sniff(path, 4096).lstrip()).startswith(b"[") and not self._eval_output(path, head):
            yield from self._read_v0(path, sha)  # a top-level array of events (an array of instances is eval output)
        else:
            yield from self._read_eval_output(path, sha)

    # ------------------------------------------------------------------------------------------------ V0
    def _read_v0(self, path: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        doc = self.load_document(path, sha)
        if isinstance(doc, Rejection):
            yield doc
            return
        if not isinstance(doc, list) or not all(isinstance(e, dict) for e in doc):
            yield self.reject(
                path, sha, Reason.parse_error, "not a list of event objects", "pass an OpenHands event list"
            )
            return
        yield self._v0_trajectory(path, sha, doc, key="v0", notes=[])

    def _v0_trajectory(
        self,
        path: Path,
        sha: str,
        events: list[dict[str, Any]],
        *,
        key: str,
        notes: list[str],
        instruction: str | None = None,
        flags: tuple[str, ...] = (),
        line: int | None = None,
        date: str | None = None,
    ) -> Trajectory | Rejection:
        """One trajectory from V0 events in order (a list file, a session folder or an evaluation instance)."""
        acc = Steps()
        call_of_event: dict[Any, str] = {}
        cwd = None
        for k, ev in enumerate(events):
            v0_event(ev, acc, call_of_event, first=k == 0)
            extras = ev.get("extras") if isinstance(ev.get("extras"), dict) else {}
            meta = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
            if cwd is None and isinstance(meta.get("working_dir"), str):
                cwd = meta["working_dir"]
        return self._finish(
            path,
            sha,
            acc,
            key=key,
            notes=notes,
            instruction=instruction,
            flags=flags,
            line=line,
            cwd=cwd,
            cwd_note="from observation",
            default_note="openhands.v0: default cwd /workspace",
            date=date or next((e["timestamp"][:10] for e in events if isinstance(e.get("timestamp"), str)), None),
        )

    def _finish(
        self,
        path: Path,
        sha: str,
        acc: Steps,
        *,
        key: str,
        notes: list[str],
        instruction: str | None,
        flags: tuple[str, ...],
        line: int | None,
        cwd: str | None,
        cwd_note: str,
        default_note: str,
        date: str | None,
        line_end: int | None = None,
    ) -> Trajectory | Rejection:
        if instruction and not acc.has_user():
            acc.steps.insert(
                next((i for i, s in enumerate(acc.steps) if s.role != "system"), len(acc.steps)),
                Step(role="user", text=instruction),
            )
            notes = [*notes, "openhands.eval: instruction as the first user message (the history has none)"]
        if not any(s.role in ("user", "assistant") for s in acc.steps) and not acc.skipped:
            where = f" ({key.replace(':', ' ')})" if key.startswith("instance") else ""
            return self.reject(
                path,
                sha,
                Reason.empty,
                f"no user or agent messages{where}",
                "nothing to train on: drop it",
                line_start=line,
                line_end=line_end or line,
            )
        notes = [*notes, *(f"openhands: {k} x{v}" for k, v in sorted(acc.counts.items()))]
        notes.append(default_note if cwd is None else f"openhands.{key.split(':')[0]}: cwd {cwd_note}")
        traj = self.trajectory(
            path,
            sha,
            key=key,
            steps=acc.steps,
            cwd=cwd or DEFAULT_CWD,
            date=date,
            flags=flags,
            line_start=line,
            line_end=line_end or line,
            transformations=notes,
        )
        if acc.skipped:
            traj.skipped_calls = {CONTEXT_NOT_REBUILT: acc.skipped}
        return traj

    # ------------------------------------------------------------------------------------------------ V0 folder
    def _read_v0_folder(self, folder: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        ids: dict[int, Path] = {}
        for p in (folder / "events").iterdir():
            m = _EVENT_FILE.match(p.name)
            if m and p.is_file():
                ids[int(m.group(1))] = p
        pages: dict[int, Path] = {}  # first id of a cache page -> page file
        cache = folder / "event_cache"
        if cache.is_dir():
            for p in cache.iterdir():
                m = _CACHE_FILE.match(p.name)
                if m and p.is_file():
                    pages[int(m.group(1))] = p
        events: list[dict[str, Any]] = []
        lost = False
        missing = 0
        page_cache: dict[int, list[Any]] = {}
        last = max(ids) if ids else -1
        for start in pages:
            last = max(last, start + 24)
        for eid in range(0, last + 1):
            if eid in ids:
                ev = self.load_document(ids[eid], sha, checked=False)
                if isinstance(ev, Rejection):
                    lost = True
                    yield self.reject(
                        folder, sha, ev.reason, f"events/{eid}.json: {ev.detail}", ev.repair_hint, line=eid
                    )
                    continue
            else:
                start = eid - eid % 25
                if start in pages and start not in page_cache:
                    page = self.load_document(pages[start], sha, checked=False)
                    page_cache[start] = page if isinstance(page, list) else []
                page = page_cache.get(start) or []
                ev = page[eid - start] if eid - start < len(page) else None
                if ev is None:
                    if eid <= max(ids, default=-1):
                        missing += 1
                    continue
            if not isinstance(ev, dict):
                lost = True
                yield self.reject(
                    folder, sha, Reason.parse_error, f"event {eid}: not an event object", "fix the event file", line=eid
                )
                continue
            events.append(ev)
        if not events:
            if not lost:
                yield self.reject(folder, sha, Reason.empty, "events/ holds no event files", "re-export the session")
            return
        notes = ["openhands.v0_folder: events read in id order"]
        if missing:
            notes.append(f"openhands.v0_folder: {missing} event id(s) absent (OpenHands skips them too)")
        meta = (
            self.load_document(folder / "metadata.json", sha, checked=False)
            if (folder / "metadata.json").is_file()
            else None
        )
        date = None
        if isinstance(meta, dict) and isinstance(meta.get("created_at"), str):
            date = meta["created_at"][:10]
        out = self._v0_trajectory(
            folder, sha, events, key="v0_folder", notes=notes, flags=("lines_lost",) if lost else (), date=date
        )
        if isinstance(out, Rejection) and lost:
            return  # the broken event files have their own rows
        yield out

    # ------------------------------------------------------------------------------------------------ eval output
    def _read_eval_output(self, path: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        k = 0
        for item in self.json_lines(path, sha):
            if isinstance(item, Rejection):
                yield item
                k += 1
                continue
            rec = item.value
            key = f"instance:{k}"
            k += 1
            if not _is_eval_output(rec):
                yield self.reject(
                    path,
                    sha,
                    Reason.parse_error,
                    f"line {item.lineno}: not an evaluation record with a history of OpenHands events",
                    "each line must be one EvalOutput object",
                    line=item.lineno,
                    record_id=content_id("traj", FORMAT, sha, key),
                )
                continue
            history = rec["history"]
            instruction = rec.get("instruction") if isinstance(rec.get("instruction"), str) else None
            name = next((rec[k] for k in ("instance_id", "id") if isinstance(rec.get(k), (str, int))), None)
            notes = [f"openhands.eval: instance {name}" if name is not None else "openhands.eval: instance"]
            if history and isinstance(history[0], list):  # [action, observation] pairs
                events = [e for pair in history if isinstance(pair, list) for e in pair if isinstance(e, dict)]
                notes.append("openhands.eval: history of [action, observation] pairs")
            else:
                events = [e for e in history if isinstance(e, dict)]
            if any("kind" in e for e in events):
                acc = Steps()
                for ev in events:
                    v1_event(ev, acc)
                yield self._finish(
                    path,
                    sha,
                    acc,
                    key=key,
                    notes=notes,
                    instruction=instruction,
                    flags=(),
                    line=item.lineno,
                    cwd=None,
                    cwd_note="",
                    default_note="openhands.v1: default cwd /workspace",
                    date=next((e["timestamp"][:10] for e in events if isinstance(e.get("timestamp"), str)), None),
                )
                continue
            yield self._v0_trajectory(
                path, sha, events, key=key, notes=notes, instruction=instruction, line=item.lineno
            )

    def _read_v1(self, folder: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        state = self.load_document(folder / "base_state.json", sha, checked=False)
        if isinstance(state, Rejection):
            yield state
            return
        files = sorted(p for p in (folder / "events").iterdir() if p.is_file() and p.suffix == ".json")
        if not files:
            yield self.reject(folder, sha, Reason.empty, "events/ holds no event files", "re-export the conversation")
            return
        acc = Steps()
        lost = False
        date = None
        for i, f in enumerate(files, start=1):
            ev = self.load_document(f, sha, checked=False)
            if isinstance(ev, Rejection):
                lost = True
                yield self.reject(folder, sha, ev.reason, f"{f.name}: {ev.detail}", ev.repair_hint, line=i)
                continue
            if not isinstance(ev, dict):
                lost = True
                yield self.reject(
                    folder, sha, Reason.parse_error, f"{f.name}: not an event object", "fix the event file", line=i
                )
                continue
            if date is None and isinstance(ev.get("timestamp"), str):
                date = ev["timestamp"][:10]
            v1_event(ev, acc)
        ws = state.get("workspace") if isinstance(state, dict) and isinstance(state.get("workspace"), dict) else {}
        cwd = ws.get("working_dir") if isinstance(ws.get("working_dir"), str) else None
        if not any(s.role in ("user", "assistant") for s in acc.steps) and not acc.skipped:
            if not lost:
                yield self.reject(folder, sha, Reason.empty, "no user or agent messages", "nothing to train on")
            return
        notes = [f"openhands: {k} x{v}" for k, v in sorted(acc.counts.items())]
        notes.append("openhands.v1: events read in file-name order")
        traj = self.trajectory(
            folder,
            sha,
            key="v1",
            steps=acc.steps,
            cwd=cwd or DEFAULT_CWD,
            date=date,
            flags=["lines_lost"] if lost else [],
            line_start=1,
            line_end=len(files),
            transformations=notes,
        )
        if acc.skipped:
            traj.skipped_calls = {CONTEXT_NOT_REBUILT: acc.skipped}
        yield traj
