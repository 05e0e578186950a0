"""Draft: a trajectory being converted — the wire messages built so far, and notes of what the builder saw.

Why notes and not verdicts: the builder (``convert.builder``) only builds messages; each thing that may make the
conversation inexact (a call its mapping could not express, a result it could not render, a call the card refuses,
a result that answers no call, a call without a result, an image, a call the user refused) is written down as a
small note with the index of the trajectory step it is at. The gates (``convert.gates``) read the notes and decide,
in their fixed order, whether the trajectory is rejected and for what, and where the exact prefix ends. So the
builder holds no policy, and the converter can keep every action before the first problem.

``message_steps`` says, for each wire message, the trajectory step it came from (``-1`` for the system prompt; a
tool message carries its *result* step, so a prefix that ends after an assistant turn leaves its results out).

Each list keeps its notes in the order the builder met them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from harnessfit.core.rejection import Failure
from harnessfit.core.trajectory import ToolCall, Trajectory

if TYPE_CHECKING:
    from harnessfit.harness.card import Violation

__all__ = [
    "Draft",
    "CallFailed",
    "ResultFailed",
    "ResultAltered",
    "CallInvalid",
    "CallRefusedInContext",
    "CallDropped",
    "CallVersionDiffers",
    "OrphanResult",
    "UnansweredCall",
    "ImagesSeen",
    "RejectedByUser",
]


@dataclass(frozen=True, slots=True)
class CallFailed:
    """The call at assistant step ``step`` has no exact Pi equivalent (the mapping's ``Failure``, or a UI-only call
    that could not be dropped): it is no training label."""

    step: int
    call: ToolCall
    failure: Failure


@dataclass(frozen=True, slots=True)
class ResultFailed:
    """The call at assistant step ``step`` maps exactly, but its result (at step ``result_step``, ``None`` if
    unknown) cannot be rendered as Pi's: the call can be a label, the context after it cannot."""

    step: int
    result_step: int | None
    call: ToolCall
    failure: Failure


@dataclass(frozen=True, slots=True)
class ResultAltered:
    """Fidelity tier ``content``: the result of the call at assistant step ``step`` (at step ``result_step``) is Pi's
    text rendered from output the source agent altered in a documented way (``alterations``; ``formats.base.Altered``);
    ``message`` is its tool message on the wire. The context after it is exact in content, not in every byte."""

    step: int
    result_step: int | None
    alterations: tuple[str, ...]
    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CallRefusedInContext:
    """A call of assistant step ``step`` that Pi refused before running it, kept in the context with its refusal in
    the target's words (``formats.base.PiCall.refused``): the turns after it are exact, the turn itself is no
    label."""

    step: int
    name: str
    call: ToolCall


@dataclass(frozen=True, slots=True)
class CallInvalid:
    """A mapped call (Pi tool ``name``) of the source ``call`` for which the card's validator reports an error (Pi
    would refuse it)."""

    step: int
    name: str
    violation: Violation
    call: ToolCall | None = None


@dataclass(frozen=True, slots=True)
class CallDropped:
    """Call ``index`` of assistant step ``step`` was dropped with its result under ``policy`` (it changes no later
    context the model saw; see ``convert.policy``)."""

    step: int
    index: int
    call: ToolCall
    policy: str


@dataclass(frozen=True, slots=True)
class CallVersionDiffers:
    """A call of a Pi session recorded under another Pi than the target (``recorded``, e.g. ``pi@0.73.1|0.79.10|0.82.0
    (session layout)``) that uses a part of the card diff that differs: ``section`` (``tools``, ``results`` or
    ``errors``) and what (``detail``), as ``harness.recorded.call_difference`` found it."""

    step: int
    name: str
    recorded: str
    section: str
    detail: str


@dataclass(frozen=True, slots=True)
class OrphanResult:
    """A tool result at ``step`` that answers no call: ``after`` says what it follows — nothing yet
    (``"start"``), a user message (``"user"``), or an assistant turn none of whose calls has its id (``"turn"``)."""

    step: int
    call_id: str | None
    after: Literal["start", "user", "turn"]


@dataclass(frozen=True, slots=True)
class UnansweredCall:
    """A mapped call of the assistant turn at ``step`` whose result the source does not have."""

    step: int
    call: ToolCall


@dataclass(frozen=True, slots=True)
class ImagesSeen:
    """``count`` images in the user message or the tool result at ``step`` (``where``)."""

    step: int
    where: Literal["user", "tool"]
    count: int


@dataclass(frozen=True, slots=True)
class RejectedByUser:
    """The user refused the call of assistant step ``step`` (its result at ``result_step`` says so)."""

    step: int
    result_step: int
    call: ToolCall


@dataclass
class Draft:
    """The conversation being built for ``trajectory`` (``messages`` with ``message_steps``, ``transformations``)
    and the notes the gates read."""

    trajectory: Trajectory
    messages: list[dict[str, Any]] = field(default_factory=list)
    message_steps: list[int] = field(default_factory=list)
    transformations: list[str] = field(default_factory=list)
    failed_calls: list[CallFailed] = field(default_factory=list)
    failed_results: list[ResultFailed] = field(default_factory=list)
    altered_results: list[ResultAltered] = field(default_factory=list)
    invalid_calls: list[CallInvalid] = field(default_factory=list)
    refused_in_context: list[CallRefusedInContext] = field(default_factory=list)
    dropped_calls: list[CallDropped] = field(default_factory=list)
    version_mismatches: list[CallVersionDiffers] = field(default_factory=list)
    orphan_results: list[OrphanResult] = field(default_factory=list)
    unanswered_calls: list[UnansweredCall] = field(default_factory=list)
    images: list[ImagesSeen] = field(default_factory=list)
    labels_from: int = 0
    """Messages before this index are history only: made from steps the reader marked ``history_only`` (what a
    compaction kept, written before it with another context), so no record takes one of them as a label."""
    user_rejections: list[RejectedByUser] = field(default_factory=list)
    recorded: str | None = None
    """A Pi session's recording Pis (``harness.recorded``), ``|``-joined, or ``"unknown"``; ``None`` for other
    formats."""
    recorded_texts: str | None = None
    """The releases whose words a Pi session's Pi-authored texts are in (``Recorded.texts_label``), ``None`` when
    its texts tell nothing or for other formats."""

    def transformed(self, *names: str) -> None:
        """Record transformations (each once, in first-seen order)."""
        for n in names:
            if n not in self.transformations:
                self.transformations.append(n)

    def alterations_in(self, messages: list[dict[str, Any]]) -> list[tuple[int, tuple[str, ...]]]:
        """(index in ``messages``, alterations) of each altered result among ``messages`` (these messages or a
        prefix of them: the same message objects)."""
        if not self.altered_results:
            return []
        marks = {id(n.message): n.alterations for n in self.altered_results}
        return [(k, marks[id(m)]) for k, m in enumerate(messages) if id(m) in marks]

    def marked_context_only(self) -> list[int]:
        """Steps of assistant turns the session marks as context only (``meta["context_only"]``: a deliberate
        mistake its recorder planted, ``formats.pi.entries.CONTEXT_ONLY_ENTRY``)."""
        return [i for i, s in enumerate(self.trajectory.steps) if s.role == "assistant" and s.meta.get("context_only")]

    def context_only(self, messages: list[dict[str, Any]]) -> list[int]:
        """Indices in ``messages`` (these messages or a prefix of them) of the assistant messages that are context
        only: their turn holds a call kept with its refusal (``refused_in_context``), or the session marks it so
        (``marked_context_only``)."""
        steps = {n.step for n in self.refused_in_context} | set(self.marked_context_only())
        if not steps:
            return []
        marked = {
            id(m)
            for m, s in zip(self.messages, self.message_steps, strict=True)
            if s in steps and m["role"] == "assistant"
        }
        return [k for k, m in enumerate(messages) if id(m) in marked]

    def add(self, step: int, *msgs: dict[str, Any]) -> None:
        """Append wire messages that came from trajectory step ``step``."""
        for m in msgs:
            self.messages.append(m)
            self.message_steps.append(step)
