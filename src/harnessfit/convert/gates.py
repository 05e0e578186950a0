"""Gates: small checks with one job each, in one ordered list, ``GATES``. The order is the contract.

A gate looks at a ``Draft`` (the trajectory, the messages built for it and the builder's notes, see
``convert.draft``) and lists its ``findings``: each a reason, a detail, a repair hint and the trajectory step it is
at. The first gate in ``GATES`` with a finding rejects the trajectory (``check``), so the reason a trajectory is
rejected for never depends on where in it the problems happened to be. Gates marked ``before_build`` look at the
trajectory alone; they come first and run before the builder, so a rejected side branch costs no mapping work.

Order: lines_lost → truncated_file → empty → side_branch → subagent (reader flags; before the build) →
mapping_failed → harness_version_mismatch → invalid_call → orphan_tool_result → missing_tool_result →
user_rejected_tool → image_content → no_final_response.

Adding a gate is one class here and one entry in ``GATES`` (``docs/extending.md``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from harnessfit.convert.draft import Draft
from harnessfit.core.rejection import Reason, Rejection, reject

__all__ = [
    "Finding",
    "Gate",
    "FlagGate",
    "LinesLost",
    "TruncatedFile",
    "Empty",
    "SideBranch",
    "Subagent",
    "MappingFailed",
    "HarnessVersionMismatch",
    "InvalidCall",
    "OrphanToolResult",
    "MissingToolResult",
    "UserRejectedTool",
    "ImageContent",
    "NoFinalResponse",
    "GATES",
    "split_gates",
    "first_rejection",
]


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem a gate found: at trajectory step ``step`` (``None``: the trajectory as a whole) and why."""

    step: int | None
    reason: Reason
    detail: str
    hint: str


class Gate(ABC):
    """One check. Why a class per check: each owns its condition and its ledger wording, and the list ``GATES``
    alone decides which one wins; the builder never decides.

    Subclasses set ``name`` (and ``before_build`` if they need only the trajectory) and implement ``findings``."""

    name: ClassVar[str]
    before_build: ClassVar[bool] = False

    @abstractmethod
    def findings(self, draft: Draft) -> Iterator[Finding]:
        """Every problem this gate sees, in the order the builder met them."""

    def check(self, draft: Draft) -> Rejection | None:
        """The rejection this gate makes, or ``None``: by default its first finding."""
        for f in self.findings(draft):
            return reject(draft.trajectory, f.reason, f.detail, f.hint)
        return None


class FlagGate(Gate):
    """Rejects a trajectory that carries a reader flag (``Trajectory.flags``): a fact only the reader could see."""

    before_build = True
    flag: ClassVar[str]
    reason: ClassVar[Reason]
    detail: ClassVar[str]
    hint: ClassVar[str]

    def findings(self, draft: Draft) -> Iterator[Finding]:
        if self.flag in draft.trajectory.flags:
            yield Finding(None, self.reason, self.detail, self.hint)


class LinesLost(FlagGate):
    """Some lines of the unit could not be read (each has its own ledger row): the conversation has a hole."""

    name, flag, reason = "lines_lost", "lines_lost", Reason.parse_error
    detail = ("some lines of the session could not be read (see their own ledger rows); a conversation with a hole "
              "is not trained")
    hint = "repair or remove the broken lines"


class TruncatedFile(FlagGate):
    """The unit ends mid-record: its last turn is not what the agent wrote."""

    name, flag, reason = "truncated_file", "truncated", Reason.truncated_file
    detail, hint = "the session file ends mid-record", "re-export the complete session"


class Empty(Gate):
    """A conversation needs a prompt and an answer."""

    name, before_build = "empty", True

    def findings(self, draft: Draft) -> Iterator[Finding]:
        roles = {s.role for s in draft.trajectory.steps}
        for role in ("user", "assistant"):
            if role not in roles:
                yield Finding(None, Reason.empty, f"no {role} message", "a conversation needs a prompt and an answer")
                return


class SideBranch(FlagGate):
    """A non-active branch of a session tree: its prefix repeats the active branch, and Pi never replays it."""

    name, flag, reason = "side_branch", "side_branch", Reason.side_branch
    detail = "a non-active branch of the session tree (Pi replays only the active one)"
    hint = "open the branch in Pi and export it as its own session"


class Subagent(FlagGate):
    """A sub-agent run: its prompts were written by a parent agent, not a user, and Pi has no sub-agents."""

    name, flag, reason = "subagent", "subagent", Reason.subagent
    detail = "a sub-agent / sidechain run: its prompts come from the parent agent"
    hint = "train sub-agent runs only with a harness that has a Task tool"


def _by_precedence(findings: Iterator[Finding], order: Sequence[Reason]) -> Finding | None:
    """The first finding of the reason that comes first in ``order`` (reasons not in it come last)."""
    rank = {r: i for i, r in enumerate(order)}
    best: Finding | None = None
    for f in findings:
        if best is None or rank.get(f.reason, len(rank)) < rank.get(best.reason, len(rank)):
            best = f
    return best


class _PrecedenceGate(Gate):
    """A gate whose findings carry several reasons; it rejects for the most important one (``precedence``)."""

    precedence: ClassVar[tuple[Reason, ...]]

    def check(self, draft: Draft) -> Rejection | None:
        f = _by_precedence(self.findings(draft), self.precedence)
        return None if f is None else reject(draft.trajectory, f.reason, f.detail, f.hint)


class MappingFailed(_PrecedenceGate):
    """A call the format's mapping cannot express exactly in Pi (its ``Failure`` names the reason and the repair).

    Failures carry several reasons; the trajectory is rejected for the first failure of the reason that comes first
    in ``precedence``. ``subagent`` (Codex ``spawn_agent`` and its kin) comes last, so a rollout that also holds
    another failure is filed under that one."""

    name = "mapping_failed"
    precedence = (Reason.unsupported_tool, Reason.unmappable_arguments, Reason.arguments_double_encoded,
                  Reason.schema_violation, Reason.aborted_or_error_turn, Reason.image_content, Reason.subagent)

    def findings(self, draft: Draft) -> Iterator[Finding]:
        for note in draft.failed_calls:
            f = note.failure
            yield Finding(note.step, f.reason, f.detail, f.repair_hint)


class HarnessVersionMismatch(Gate):
    """A call of a Pi session recorded under another Pi than the target, where ``harnessfit harness diff`` says a
    part the call uses differs (its tool's verdict on the recorded arguments, the template of its recorded result):
    Pi's answer in the session is not what the target Pi would have sent (``harness.recorded``). Before
    ``invalid_call``: a call the target refuses but the recording Pi ran is a version difference, not a bad call."""

    name = "harness_version_mismatch"

    def findings(self, draft: Draft) -> Iterator[Finding]:
        for note in draft.version_mismatches:
            yield Finding(note.step, Reason.harness_version_mismatch,
                          f"{note.section} differ: {note.detail}; session recorded by {note.recorded}",
                          "convert for the Pi that recorded the session (--harness pi@VERSION), or re-record the "
                          "task with the target Pi (`harnessfit synth --harness`)")


_VIOLATION_REASONS = {"unknown_tool": Reason.unsupported_tool,
                      "arguments_double_encoded": Reason.arguments_double_encoded}


class InvalidCall(_PrecedenceGate):
    """A mapped call the card's validator refuses (Pi would answer it with a validation error, not run it)."""

    name = "invalid_call"
    precedence = (Reason.unsupported_tool, Reason.arguments_double_encoded, Reason.schema_violation)

    def findings(self, draft: Draft) -> Iterator[Finding]:
        for note in draft.invalid_calls:
            v = note.violation
            yield Finding(note.step, _VIOLATION_REASONS.get(v.code, Reason.schema_violation),
                          f"{note.name}: {v.code}: {v.detail}",
                          "fix the call so it validates against the harness card's schema")


class OrphanToolResult(Gate):
    """Every tool message must answer a call of the assistant message right before it."""

    name = "orphan_tool_result"
    _WHERE = {"start": "before any call", "user": "follows a user message", "turn": "answers no call of its turn"}

    def findings(self, draft: Draft) -> Iterator[Finding]:
        for note in draft.orphan_results:
            yield Finding(note.step, Reason.orphan_tool_result,
                          f"tool result {note.call_id!r} {self._WHERE[note.after]}",
                          "pair every tool result with the call it answers")


class MissingToolResult(Gate):
    """A call without a result cannot be trained: the next message Pi sends would be its result."""

    name = "missing_tool_result"

    def findings(self, draft: Draft) -> Iterator[Finding]:
        for note in draft.unanswered_calls:
            yield Finding(note.step, Reason.missing_tool_result, f"call {note.call.id!r} ({note.call.name}) has no "
                          "result", "the session ended or lost the result; re-run or drop the call")


class UserRejectedTool(FlagGate):
    """The user refused a tool call (Claude Code's approval step); Pi has none. After the draft gates, because it
    decides only when no call-level problem does (the order of ``GATES`` is the contract)."""

    name, flag, reason, before_build = "user_rejected_tool", "user_rejected_tool", Reason.aborted_or_error_turn, False
    detail = "the user rejected a tool call (Pi has no approval step)"
    hint = "cut the session before the rejected call"


class ImageContent(Gate):
    """Images in a user message or a tool result: a text-only model never sees them."""

    name = "image_content"

    def findings(self, draft: Draft) -> Iterator[Finding]:
        for note in draft.images:
            if note.where == "user":
                yield Finding(note.step, Reason.image_content, f"user message with {note.count} image(s)",
                              "remove the images or convert for a vision-capable model")
            else:
                yield Finding(note.step, Reason.image_content, f"tool result with {note.count} image(s)",
                              "drop the image result or convert for a vision-capable model")


class NoFinalResponse(Gate):
    """The conversation (after its unanswered tail is trimmed) must end with the agent's final answer."""

    name = "no_final_response"

    def findings(self, draft: Draft) -> Iterator[Finding]:
        last = draft.messages[-1]
        if last["role"] != "assistant" or "tool_calls" in last or not last.get("content"):
            yield Finding(None, Reason.no_final_response,
                          f"the conversation ends with a {last['role']} message, not an answer",
                          "keep only sessions whose last turn is the agent's final answer")


GATES: tuple[Gate, ...] = (
    LinesLost(),
    TruncatedFile(),
    Empty(),
    SideBranch(),
    Subagent(),
    MappingFailed(),
    HarnessVersionMismatch(),
    InvalidCall(),
    OrphanToolResult(),
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


def first_rejection(draft: Draft, gates: Sequence[Gate]) -> Rejection | None:
    """Run ``gates`` in order; the first that rejects decides."""
    for gate in gates:
        rej = gate.check(draft)
        if rej is not None:
            return rej
    return None
