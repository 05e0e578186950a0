"""Claude Code session reader (``~/.claude/projects/<project>/<session>.jsonl``).

Why: Claude Code writes one API message over several lines (one content block per line, same ``message.id``),
puts tool results into *user* lines, and interleaves many bookkeeping line types. This reader merges split
messages, turns tool_result blocks into tool steps (keeping ``toolUseResult`` in ``meta`` for the mapping), and
counts noise lines instead of treating them as data. The line shapes are named in ``formats.claude_code.lines``,
the per-file state is ``formats.claude_code.session``.

Policies:
- Split messages: the lines of one assistant message (same ``message.id``) make one turn, also when Claude Code
  wrote a call's result between them (streaming tool execution runs a call before the message's next block is
  written): every call of the message is in its turn, in order, and the results follow the turn
  (``claude.merge_split_message_across_results``). Only result lines that answer the message's own calls may sit
  between its lines; anything else (a user's text) ends it.
- Noise (not rejections; counted in ``claude.noise_lines_skipped``): file-history-snapshot, progress,
  queue-operation, summary (a session title for the resume list, not context), system, permission-mode,
  attachment, ai-title, last-prompt, custom-title, any other non user/assistant line type, and ``isMeta`` user lines
  other than a prompt command's expansion (below). Content is read as a string or a list of blocks (a bare string in
  a user message's list is text); ``thinking`` is kept as reasoning, ``redacted_thinking`` has no text to keep;
  ``isVisibleInTranscriptOnly`` is a display flag and changes nothing.
- Slash commands. The echo (``<command-name>``/``<command-message>``/``<command-args>``, either order) is the
  command as typed, and a local command's caveat and output (``<local-command-stdout>``…) are local UI: all dropped
  (Claude Code sends them to the model too, the caveat telling it not to answer them; Pi has no such messages).
  A *prompt* command (custom or built-in, e.g. ``/init``) is followed by an ``isMeta`` user line holding its
  expanded text (arguments substituted, or appended as "ARGUMENTS: …"): the instruction the model acted on. When an
  ``isMeta`` line's parent is an echo (or, if its parent is no line of the file, it comes right after one in its
  thread) and it holds text that is not local-command UI, it is the user step (``claude.slash_command_prompt``) —
  as in Pi, where a prompt template's ``/name args`` is expanded and only the expansion is sent. Other ``isMeta``
  lines (a skill body after a ``Skill`` tool call, resume notes) stay noise. "[Request interrupted by user…]"
  markers are dropped and recorded (Pi drops the aborted turn).
- Compaction: Claude Code sends the model only what follows the last compaction, whose summary (an
  ``isCompactSummary`` user line, after a ``compact_boundary`` system line) is the first user message. So each
  compaction starts a new trajectory of the main thread (key ``compaction:<k>``; ``session`` is the part before the
  first), beginning with the summary as the user step; every epoch shares the first's ``root_request_id``. Where
  Claude Code changed the context in a way the file does not spell out — a ``microcompact_boundary`` (old tool
  results cleared), a boundary whose ``compactMetadata`` kept earlier messages — the epoch ends there: its later
  calls are counted in ``Trajectory.skipped_calls`` as ``context_not_rebuilt`` until the next compaction.
- Synthetic assistant lines (``message.model == "<synthetic>"``): an API error (``isApiErrorMessage``) is kept as
  an assistant turn with stop reason ``error``, which the converter drops as Pi drops its own error turns; a
  stand-in such as "No response requested." (written on a resume, after an ``isMeta`` "Continue from where you left
  off.") is dropped (``claude.drop_synthetic_assistant``): no model wrote it and Pi has no such message.
- Sub-agents: lines with ``isSidechain: true`` are a sub-agent's run written into the parent's file (one per
  ``Task`` call, possibly several running at once, so their lines interleave). Each sidechain is one trajectory,
  found by its root: a sidechain line whose ``parentUuid`` is null or names no sidechain line starts one, and every
  line whose parent is in a sidechain belongs to that sidechain. A sub-agent's run is a whole agent conversation
  whose user message is the prompt its parent wrote (the ``prompt`` of the parent's ``Task``/``Agent`` call; the
  sidechain's first line holds it verbatim): in Pi it is a session opened with that prompt, so it is a trajectory of
  its own, in the split of the session's root request (it shares the main thread's ``root_request_id``). It is noted
  ``claude.subagent_prompt_from_task`` when a ``Task``/``Agent`` call of the file wrote its prompt, else
  ``claude.subagent_prompt_unlinked``. The parent's ``Task`` call stays what the mapping rejects (Pi has no Task
  tool). Flagged ``subagent`` (the gate rejects them, naming why) are only runs whose prompt is no one's request:
  Claude Code's own warm-up of a sub-agent (the prompt ``Warmup``, no call wrote it), and a sidechain that does not
  open with a prompt. A file under ``subagents/`` is a sub-agent's transcript (its lines carry the parent's
  ``sessionId``), read the same way and noted ``subagent_of:claude_code:<sessionId>``; a session file with Task calls
  notes ``session:claude_code:<sessionId>``, so the build's grouped split puts those transcripts in its split.
  ``agent-acompact-*`` files there are Claude Code's compaction runs: flagged.
- A user's rejection of a tool call (``is_error`` result "doesn't want to proceed…") → flag
  ``user_rejected_tool`` and ``meta["user_rejected"]`` on the result step: Pi has no approval step, so the gate
  rejects the trajectory (``user_rejected_call``) and keeps the actions before the refused call.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from harnessfit.core.ids import SESSION_NOTE, SUBAGENT_OF_NOTE
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import CONTEXT_NOT_REBUILT, Trajectory
from harnessfit.formats.base import BaseTraceReader
from harnessfit.formats.claude_code.session import (
    USER_REJECTION_MARK,
    Session,
    Thread,
)
from harnessfit.formats.reading import first_json_line, sniff

__all__ = ["NOISE_TYPES", "TASK_TOOLS", "USER_REJECTION_MARK", "ClaudeCodeReader"]

TASK_TOOLS = frozenset({"Task", "Agent"})
"""Claude Code's sub-agent tool (``Agent`` in later releases): its ``prompt`` argument opens the sub-agent's run."""
WARMUP_PROMPT = "Warmup"

NOISE_TYPES = frozenset(
    {
        "file-history-snapshot",
        "progress",
        "queue-operation",
        "summary",
        "system",
        "permission-mode",
        "attachment",
        "ai-title",
        "last-prompt",
        "custom-title",
        "tag",
        "agent-name",
    }
)
_CLAUDE_KEYS = {"sessionId", "parentUuid", "uuid", "userType", "isSidechain"}


class ClaudeCodeReader(BaseTraceReader):
    """Reads one Claude Code session file into its trajectories (the main thread's compaction epochs, one per
    sidechain), plus per-line rejections for unreadable lines."""

    name = "claude_code"

    def detect(self, path: Path) -> bool:
        if not path.is_file():
            return False
        head = sniff(path, 65536)
        if b'"sessionId"' not in head and b'"parentUuid"' not in head:
            return False
        first = first_json_line(path)
        return isinstance(first, dict) and (bool(_CLAUDE_KEYS & set(first)) or first.get("type") in NOISE_TYPES)

    def read_file(self, path: Path, sha: str) -> Iterator[Trajectory | Rejection]:
        session = Session()
        for item in self.json_lines(path, sha):
            if isinstance(item, Rejection):
                session.lost(item.reason == Reason.truncated_file)
                yield item
                continue
            if not isinstance(item.value, dict):
                session.lost(False)
                yield self.reject(
                    path,
                    sha,
                    Reason.parse_error,
                    f"line {item.lineno}: not a JSON object",
                    "each line must be one object",
                    line=item.lineno,
                )
                continue
            session.feed(item.lineno, item.value)
        if all(not t.steps and not t.skipped_calls for t in session.threads()):
            yield self.reject(
                path,
                sha,
                Reason.empty,
                f"no user/assistant messages ({session.noise} bookkeeping lines)",
                "the session holds no conversation",
            )
            return
        yield from self._records(path, sha, session, whole_file_subagent="subagents" in path.parts)

    def _records(self, path: Path, sha: str, session: Session, whole_file_subagent: bool) -> Iterator[Trajectory]:
        sidechains = sum(1 for t in session.sides.values() if t.steps)
        task_prompts = {
            c.arguments["prompt"]
            for t in session.threads()
            for s in t.steps
            for c in s.tool_calls
            if c.name in TASK_TOOLS and isinstance(c.arguments, dict) and isinstance(c.arguments.get("prompt"), str)
        }
        compactions = len(session.epochs) - 1
        root: str | None = None
        links = _session_notes(
            session,
            whole_file_subagent,
            spawns=any(c.name in TASK_TOOLS for t in session.threads() for s in t.steps for c in s.tool_calls),
        )
        named: list[tuple[str, Thread, list[str]]] = []
        for k, t in enumerate(session.epochs):
            notes = [f"claude.sidechains_split_off:{sidechains}"] if sidechains else []
            if k:
                notes.append(f"claude.after_compaction:{k}/{compactions}")
            elif compactions:
                notes.append(f"claude.compactions_split_off:{compactions}")
            named.append(("session" if k == 0 else f"compaction:{k}", t, notes))
        named += [
            (f"sidechain:{key}", t, [f"claude.sidechain_split_by_root:{sidechains}"])
            for key, t in session.sides.items()
        ]
        for key, t, notes in named:
            if not t.steps and not t.skipped_calls:
                continue
            flags = set(t.flags)
            if key.startswith("sidechain:") or whole_file_subagent:
                why, note = _subagent_run(t, task_prompts, path)
                flags.update(["subagent"] if why else [])
                notes = [*notes, f"subagent:{why}" if why else note]
            noise = [f"claude.noise_lines_skipped:{session.noise}"] if session.noise else []
            traj = self.trajectory(
                path,
                sha,
                key=key,
                steps=t.steps,
                cwd=session.cwd,
                date=session.date,
                source_harness_version=session.version,
                flags=sorted(flags),
                line_start=t.first_line,
                line_end=t.last_line,
                transformations=list(dict.fromkeys([*links, *noise, *notes, *t.transformations])),
            )
            traj.lost_at = t.lost_at
            if t.skipped_calls:
                traj.skipped_calls = {CONTEXT_NOT_REBUILT: t.skipped_calls}
            root = root or traj.root_request_id  # every epoch and sub-agent run of a session: the same split
            traj.root_request_id = root
            yield traj


def _subagent_run(thread: Thread, task_prompts: set[str], path: Path) -> tuple[str | None, str]:
    """Why a sub-agent's run is no one's request (``None`` when it is a trajectory like any), and the note on how its
    prompt is linked to its parent's call."""
    first = thread.steps[0] if thread.steps else None
    if first is None or first.role != "user":
        return "the sub-agent run does not open with its prompt", ""
    if first.text in task_prompts:
        return None, "claude.subagent_prompt_from_task"
    if path.name.startswith("agent-acompact"):
        return "Claude Code's compaction run, not a request", ""
    if (first.text or "").strip() == WARMUP_PROMPT:
        return 'Claude Code\'s warm-up of a sub-agent (its prompt "Warmup" is no request)', ""
    return None, "claude.subagent_prompt_unlinked"


def _session_notes(session: Session, whole_file_subagent: bool, spawns: bool) -> list[str]:
    """The links the build's grouped split follows (``core.ids.session_links``): a sub-agent transcript file names the
    session that spawned it (its lines' ``sessionId``), a session with Task calls names itself."""
    if session.session_id is None:
        return []
    if whole_file_subagent:
        return [f"{SUBAGENT_OF_NOTE}claude_code:{session.session_id}"]
    return [f"{SESSION_NOTE}claude_code:{session.session_id}"] if spawns else []
