"""Draft: a trajectory being converted — the wire messages built so far, and notes of what the builder saw.

Why notes and not verdicts: the builder (``convert.wire``) only builds messages; each thing that may make the
conversation inexact (a call its mapping could not express, a call the card refuses, a result that answers no call,
a call without a result, an image) is written down as a small note with the index of the trajectory step it is at.
The gates (``convert.gates``) read the notes and decide, in their fixed order, whether the trajectory is rejected
and for what. So the builder holds no policy, and a later change can ask *where* the first problem is.

Each list keeps its notes in the order the builder met them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from harnessfit.core.rejection import Failure
from harnessfit.core.trajectory import ToolCall, Trajectory

if TYPE_CHECKING:
    from harnessfit.harness.card import Violation

__all__ = ["Draft", "CallFailed", "CallInvalid", "CallVersionDiffers", "OrphanResult", "UnansweredCall", "ImagesSeen"]


@dataclass(frozen=True, slots=True)
class CallFailed:
    """The format's mapping returned a ``Failure`` for the call at ``step``: it has no exact Pi equivalent."""

    step: int
    call: ToolCall
    failure: Failure


@dataclass(frozen=True, slots=True)
class CallInvalid:
    """A mapped call (Pi tool ``name``) for which the card's validator reports an error (Pi would refuse it)."""

    step: int
    name: str
    violation: Violation


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


@dataclass
class Draft:
    """The conversation being built for ``trajectory`` (``messages``, ``transformations``) and the notes the gates
    read. ``open_assistant`` is the last message when it is an assistant answer whose calls were all dropped:
    Pi would have sent it together with the next assistant turn, so the builder merges that turn into it."""

    trajectory: Trajectory
    messages: list[dict[str, Any]] = field(default_factory=list)
    transformations: list[str] = field(default_factory=list)
    failed_calls: list[CallFailed] = field(default_factory=list)
    invalid_calls: list[CallInvalid] = field(default_factory=list)
    version_mismatches: list[CallVersionDiffers] = field(default_factory=list)
    orphan_results: list[OrphanResult] = field(default_factory=list)
    unanswered_calls: list[UnansweredCall] = field(default_factory=list)
    images: list[ImagesSeen] = field(default_factory=list)
    open_assistant: dict[str, Any] | None = None

    def transformed(self, *names: str) -> None:
        """Record transformations (each once, in first-seen order)."""
        for n in names:
            if n not in self.transformations:
                self.transformations.append(n)
