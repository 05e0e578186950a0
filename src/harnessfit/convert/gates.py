"""Gates: small checks with one job each, in one ordered list, ``GATES``. The order is the contract.

A gate looks at a ``Draft`` (the trajectory, the messages built for it and the builder's notes, see
``convert.draft``) and lists its ``findings``: each a reason, a detail computed from the data, a repair hint that fits
the case, the trajectory step it is at, the source tool it is about, and its ``cut``. The first gate in ``GATES``
with a finding names the trajectory's ledger row (``check``), so the reason a trajectory is rejected for never
depends on where in it the problems happened to be; the row's detail lists every blocking call with its count.
Gates marked ``before_build`` look at the trajectory alone; they come first and run before the builder, so a
rejected side branch costs no mapping work.

**Cuts: what an exact prefix is.** Every assistant turn before the first problem is an exact action in an exact
context, so it is a training label even when the trajectory as a whole is rejected. ``GateFinding.cut`` is the index of
the first trajectory step the problem makes unusable; the labels are the assistant turns at steps ``< min(cut)``:

- a problem in a *call* (unsupported, unmappable arguments, invalid, a UI-only call that cannot be dropped, a call
  the user refused): ``cut`` = the call's turn — the turn is no label, nor is anything after it;
- a problem in a *result* (it cannot be rendered as Pi's; it is missing while a later turn of a non-Pi source saw
  it): ``cut`` = the turn + 1 — the call is an exact label, but no later context holds its result exactly;
- a problem at a step of the context (a user image, an orphan result): ``cut`` = that step;
- a hole where lines were lost: ``cut`` = ``Trajectory.lost_at`` when the reader knows it, else 0;
- a property of the whole run that makes no context inexact (no final answer): ``cut`` = ``None`` — every action is
  a label, only the complete conversation is not exported;
- a run that is not a user's (a side branch, a sub-agent, no prompt at all) or whose answers were written with other
  tools on offer: ``cut`` = 0.

Order: lines_lost → truncated_file → empty → side_branch → subagent → foreign_tools (reader flags; before the build) →
mapping_failed → harness_version_mismatch → invalid_call → orphan_tool_result → turn_after_answer → missing_tool_result → user_rejected_tool →
image_content → no_final_response.

Adding a gate is one class here and one entry in ``GATES`` (``docs/extending.md``); the base classes and the
ledger row a gate makes are in ``convert.gate_base``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar

from harnessfit.convert.draft import Draft
from harnessfit.convert.gate_base import FlagGate, Gate, GateFinding, PrecedenceGate, blocking_summary, rejection_of
from harnessfit.core.rejection import Reason

__all__ = [
    "GateFinding",
    "Gate",
    "FlagGate",
    "LinesLost",
    "TruncatedFile",
    "Empty",
    "SideBranch",
    "Subagent",
    "ForeignTools",
    "MappingFailed",
    "HarnessVersionMismatch",
    "InvalidCall",
    "OrphanToolResult",
    "TurnAfterAnswer",
    "MissingToolResult",
    "UserRejectedTool",
    "ImageContent",
    "NoFinalResponse",
    "GATES",
    "split_gates",
    "all_findings",
    "blocking_summary",
    "rejection_of",
]


class LinesLost(FlagGate):
    """Some lines of the unit could not be read (each has its own ledger row): the conversation has a hole. The
    steps before the hole are whole when the reader says where it is (``Trajectory.lost_at``)."""

    name, flag, reason = "lines_lost", "lines_lost", Reason.parse_error
    detail = (
        "some lines of the session could not be read (see their own ledger rows); a conversation with a hole "
        "is not trained"
    )
    hint = "repair or remove the broken lines"

    def cut(self, draft: Draft) -> int | None:
        return draft.trajectory.lost_at or 0


class TruncatedFile(FlagGate):
    """The unit ends mid-record: its last turn is not what the agent wrote."""

    name, flag, reason = "truncated_file", "truncated", Reason.truncated_file
    detail, hint = "the session file ends mid-record", "re-export the complete session"

    def cut(self, draft: Draft) -> int | None:
        return draft.trajectory.lost_at or 0


class Empty(Gate):
    """A conversation needs a prompt and an answer."""

    name, before_build = "empty", True

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        roles = {s.role for s in draft.trajectory.steps}
        for role in ("user", "assistant"):
            if role not in roles:
                yield GateFinding(
                    None, Reason.empty, f"no {role} message", "a conversation needs a prompt and an answer"
                )
                return


class SideBranch(FlagGate):
    """A non-active branch of a session tree: its prefix repeats the active branch, and Pi never replays it."""

    name, flag, reason = "side_branch", "side_branch", Reason.side_branch
    detail = "a non-active branch of the session tree (Pi replays only the active one)"
    hint = "open the branch in Pi and export it as its own session"


class Subagent(FlagGate):
    """A sub-agent run whose prompt is no one's request (a warm-up, compaction or review run; the reader notes why as
    ``subagent:<why>``). A run that opens with the prompt its parent wrote is a trajectory like any, not flagged."""

    name, flag, reason = "subagent", "subagent", Reason.subagent
    detail = "a sub-agent run whose prompt is no request of a user or parent agent"
    hint = "keep only sub-agent runs that open with the prompt their parent wrote"

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        if self.flag in draft.trajectory.flags:
            why = next(
                (t.split(":", 1)[1] for t in draft.trajectory.provenance.transformations if t.startswith("subagent:")),
                "",
            )
            yield GateFinding(None, self.reason, f"{self.detail}: {why}" if why else self.detail, self.hint, cut=0)


class ForeignTools(FlagGate):
    """The source offered the model tools Pi lacks (its tool list; the reader notes them as ``foreign_tools:<names>``):
    every answer was written with them on offer, so no action of it is a label."""

    name, flag, reason = "foreign_tools", "foreign_tools", Reason.unsupported_tool
    detail = "the conversation offers tools Pi lacks, so every answer was written with them on offer"
    hint = "keep only conversations whose tool list is Pi's read/bash/edit/write (or that declare no tools)"

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        if self.flag in draft.trajectory.flags:
            names = next(
                (
                    t.split(":", 1)[1]
                    for t in draft.trajectory.provenance.transformations
                    if t.startswith("foreign_tools:")
                ),
                "",
            )
            detail = self.detail + (f" ({names.replace(',', ', ')})" if names else "")
            yield GateFinding(None, self.reason, detail, self.hint, cut=0)


class MappingFailed(PrecedenceGate):
    """A call the format's mapping cannot express exactly in Pi, or whose result it cannot render as Pi's (its
    ``Failure`` names the reason and the repair).

    Failures carry several reasons; the row names the first failure of the reason that comes first in
    ``precedence``. ``subagent`` (Codex ``spawn_agent`` and its kin) comes last, so a rollout that also holds
    another failure is filed under that one."""

    name = "mapping_failed"
    precedence = (
        Reason.unsupported_tool,
        Reason.ui_only_call,
        Reason.unmappable_arguments,
        Reason.arguments_double_encoded,
        Reason.schema_violation,
        Reason.aborted_or_error_turn,
        Reason.unmappable_result,
        Reason.image_content,
        Reason.subagent,
    )

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        notes = sorted(
            [(n.step, 0, n) for n in draft.failed_calls] + [(n.step, 1, n) for n in draft.failed_results],
            key=lambda t: (t[0], t[1]),
        )
        for step, is_result, note in notes:
            f = note.failure
            yield GateFinding(
                step, f.reason, f.detail, f.repair_hint, cut=step + 1 if is_result else step, tool=note.call.name
            )


class HarnessVersionMismatch(Gate):
    """A call of a Pi session recorded under another Pi than the target, where ``harnessfit harness diff`` says a
    part the call uses differs (its tool's verdict on the recorded arguments, the template of its recorded result):
    Pi's answer in the session is not what the target Pi would have sent (``harness.recorded``). Before
    ``invalid_call``: a call the target refuses but the recording Pi ran is a version difference, not a bad call.
    A differing verdict on the call (section ``tools``) cuts at the call's turn; a differing result or error text
    cuts after it (the call is exact, its result in the later context is not the target's)."""

    name = "harness_version_mismatch"

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        for note in draft.version_mismatches:
            yield GateFinding(
                note.step,
                Reason.harness_version_mismatch,
                f"{note.section} differ: {note.detail}; session recorded by {note.recorded}",
                "convert for the Pi that recorded the session (--harness pi@VERSION), or re-record the "
                "task with the target Pi (`harnessfit synth --harness`)",
                cut=note.step if note.section == "tools" else note.step + 1,
                tool=note.name,
            )


_VIOLATION_REASONS = {
    "unknown_tool": Reason.unsupported_tool,
    "arguments_double_encoded": Reason.arguments_double_encoded,
}


class InvalidCall(PrecedenceGate):
    """A mapped call the card's validator refuses (Pi would answer it with a validation error, not run it)."""

    name = "invalid_call"
    precedence = (Reason.unsupported_tool, Reason.arguments_double_encoded, Reason.schema_violation)

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        for note in draft.invalid_calls:
            v = note.violation
            reason = _VIOLATION_REASONS.get(v.code, Reason.schema_violation)
            tool = note.call.name if note.call is not None else note.name
            if v.code == "unknown_tool":
                detail = f"tool {note.name!r} is not one of the card's tools: {v.detail}"
                hint = (
                    "a tool from a Pi extension or another harness: convert with a card that lists it, or keep "
                    "sessions that do not call it"
                )
            elif v.code == "arguments_double_encoded":
                detail, hint = f"{note.name}: {v.detail}", "decode the inner JSON string once so arguments is an object"
            else:
                detail = f"{note.name}: {v.code}: {v.detail}"
                hint = f"Pi refuses this {note.name} call ({v.code}): it is no label; keep the session up to it"
            yield GateFinding(note.step, reason, detail, hint, cut=note.step, tool=tool)


class OrphanToolResult(Gate):
    """Every tool message must answer a call of the assistant message right before it."""

    name = "orphan_tool_result"
    _WHERE: ClassVar[dict[str, str]] = {
        "start": "before any call",
        "user": "follows a user message",
        "turn": "answers no call of its turn",
    }

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        for note in draft.orphan_results:
            yield GateFinding(
                note.step,
                Reason.orphan_tool_result,
                f"tool result {note.call_id!r} at step {note.step} {self._WHERE[note.after]}",
                "pair every tool result with the call it answers",
                cut=note.step,
            )


class TurnAfterAnswer(Gate):
    """An assistant turn right after an answer (an assistant message without calls), with no user message between.
    Pi's agent loop ends a run with an answer and starts the next one only with a user message, so it does not send
    such a context: the answer is a label, the turn after it is not (nothing is merged to hide it). A Pi session is
    exempt: it records what Pi itself sent (an old Pi did send it; ``../shared/traces/pi`` has one)."""

    name = "turn_after_answer"

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        if draft.trajectory.source == "pi":
            return
        msgs, steps, source = draft.messages, draft.message_steps, draft.trajectory.steps
        for k in range(2, len(msgs)):
            prev, m = msgs[k - 1], msgs[k]
            # an answer: the source turn made no call (a turn whose calls failed is another gate's finding)
            if (
                m["role"] == "assistant"
                and prev["role"] == "assistant"
                and "tool_calls" not in prev
                and not source[steps[k - 1]].tool_calls
            ):
                yield GateFinding(
                    steps[k],
                    Reason.turn_after_answer,
                    f"the assistant turn at step {steps[k]} follows an answer with no user message between",
                    "Pi ends a run with an answer: keep the session up to the answer, or split it there",
                    cut=steps[k],
                )


class MissingToolResult(Gate):
    """A call without a result is answered by Pi's synthetic "No result provided" (the builder puts it in, as Pi
    does when it sends any history, ``transformMessages`` in pi-ai), so the context stays exact and the call is a
    label. What is not exact is a *later* turn of a source other than Pi: its agent saw the real result, which the
    trace lost, while the context now says there was none, so the cut is right after the call's turn. In a Pi
    session every later turn was written after Pi sent exactly that synthetic result (``PI_REPLAYED``)."""

    name = "missing_tool_result"
    PI_REPLAYED: ClassVar[frozenset[str]] = frozenset({"pi"})

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        traj = draft.trajectory
        if traj.source in self.PI_REPLAYED:
            return
        for note in draft.unanswered_calls:
            later = any(
                s.role == "assistant" and s.stop_reason not in ("aborted", "error") for s in traj.steps[note.step + 1 :]
            )
            if later:
                yield GateFinding(
                    note.step,
                    Reason.missing_tool_result,
                    f"call {note.call.id!r} ({note.call.name}) has no result in the trace, and the agent's next turn was made after seeing one",
                    "the call is kept as a label; re-export the trace with its tool results to keep the turns after it",
                    cut=note.step + 1,
                    tool=note.call.name,
                )


class UserRejectedTool(Gate):
    """The user refused a tool call (Claude Code's approval step); Pi has none, and a refused call is no label.
    After the draft gates, because it decides only when no call-level problem does (the order of ``GATES`` is the
    contract)."""

    name = "user_rejected_tool"

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        hint = "Pi has no approval step: the calls before the refused one are kept"
        for note in draft.user_rejections:
            yield GateFinding(
                note.step,
                Reason.user_rejected_call,
                f"the user refused {note.call.name} call {note.call.id!r} (its result at step {note.result_step})",
                hint,
                cut=note.step,
                tool=note.call.name,
            )
        if not draft.user_rejections and "user_rejected_tool" in draft.trajectory.flags:
            yield GateFinding(
                None, Reason.user_rejected_call, "the user refused a tool call (the step is unknown)", hint, cut=0
            )


class ImageContent(Gate):
    """Images in a user message or a tool result: a text-only model never sees them."""

    name = "image_content"

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        for note in draft.images:
            if note.where == "user":
                yield GateFinding(
                    note.step,
                    Reason.image_content,
                    f"user message at step {note.step} holds {note.count} image(s)",
                    "remove the images or convert for a vision-capable model",
                    cut=note.step,
                )
            else:
                yield GateFinding(
                    note.step,
                    Reason.image_content,
                    f"tool result at step {note.step} holds {note.count} image(s)",
                    "drop the image result or convert for a vision-capable model",
                    cut=note.step,
                )


class NoFinalResponse(Gate):
    """The conversation (after its unanswered tail is trimmed) must end with the agent's final answer. Every action
    before the end is still a label (``cut`` is ``None``)."""

    name = "no_final_response"

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        last = draft.messages[-1]
        if last["role"] != "assistant" or "tool_calls" in last or not last.get("content"):
            what = "a call with no answer after it" if last["role"] == "assistant" else f"a {last['role']} message"
            yield GateFinding(
                None,
                Reason.no_final_response,
                f"the conversation ends with {what}, not an answer",
                "the actions are kept as labels; only a session that ends with the agent's answer is a conversation",
                cut=None,
            )


GATES: tuple[Gate, ...] = (
    LinesLost(),
    TruncatedFile(),
    Empty(),
    SideBranch(),
    Subagent(),
    ForeignTools(),
    MappingFailed(),
    HarnessVersionMismatch(),
    InvalidCall(),
    OrphanToolResult(),
    TurnAfterAnswer(),
    MissingToolResult(),
    UserRejectedTool(),
    ImageContent(),
    NoFinalResponse(),
)
"""Every gate, in the order that decides a rejection's reason."""


def split_gates(gates: Sequence[Gate]) -> tuple[Sequence[Gate], Sequence[Gate]]:
    """``gates`` cut into those that run before the build and the rest; the first kind must come first, or an early
    rejection could overrule a gate the order puts ahead of it."""
    n = 0
    while n < len(gates) and gates[n].before_build:
        n += 1
    if any(g.before_build for g in gates[n:]):
        raise ValueError("gates marked before_build must come first in GATES")
    return gates[:n], gates[n:]


def all_findings(draft: Draft, gates: Sequence[Gate]) -> list[tuple[Gate, list[GateFinding]]]:
    """Every gate of ``gates`` that found something, in order, with its findings."""
    out = []
    for gate in gates:
        found = list(gate.findings(draft))
        if found:
            out.append((gate, found))
    return out
