"""Gates: deterministic checks, in one fixed order, each owning one closed ``Reason``.

Why gates are separate from the builder: the builder (``convert.wire``) notes every problem it meets while mapping
a trajectory (first occurrence per reason, in a ``Draft``); the gates then decide, *in order*, which one rejects.
So the reason a trajectory is rejected for never depends on where in the trajectory problems happened to be.

Order (= ``GATE_ORDER``, the order of ``Reason``):
parse_error → truncated_file → empty → side_branch → subagent → unsupported_tool → unmappable_arguments →
arguments_double_encoded → schema_violation → orphan_tool_result → missing_tool_result → aborted_or_error_turn →
image_content → no_final_response.

The first four look at the trajectory alone (reader flags); the rest at the draft.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harnessfit.core.rejection import Reason, Rejection, reject
from harnessfit.core.trajectory import Trajectory

__all__ = ["Draft", "Gate", "GATES", "GATE_ORDER", "first_rejection"]


@dataclass
class Draft:
    """A trajectory being converted: wire ``messages`` built so far and the first ``problem`` met per reason."""

    trajectory: Trajectory
    messages: list[dict[str, Any]] = field(default_factory=list)
    problems: dict[Reason, tuple[str, str]] = field(default_factory=dict)
    transformations: list[str] = field(default_factory=list)
    mergeable: set[int] = field(default_factory=set)

    def problem(self, reason: Reason, detail: str, hint: str) -> None:
        self.problems.setdefault(reason, (detail, hint))

    def transformed(self, *names: str) -> None:
        for n in names:
            if n not in self.transformations:
                self.transformations.append(n)


_FLAG_GATES: dict[Reason, tuple[str, str, str]] = {
    Reason.parse_error: ("lines_lost", "some lines of the session could not be read (see their own ledger rows); "
                         "a conversation with a hole is not trained", "repair or remove the broken lines"),
    Reason.truncated_file: ("truncated", "the session file ends mid-record", "re-export the complete session"),
    Reason.side_branch: ("side_branch", "a non-active branch of the session tree (Pi replays only the active one)",
                         "open the branch in Pi and export it as its own session"),
    Reason.subagent: ("subagent", "a sub-agent / sidechain run: its prompts come from the parent agent",
                      "train sub-agent runs only with a harness that has a Task tool"),
}


@dataclass(frozen=True)
class Gate:
    """One reason's check. ``check`` takes a ``Draft`` (or a bare ``Trajectory`` for the reader-flag gates)."""

    reason: Reason

    def check(self, item: Draft | Trajectory) -> Rejection | None:
        traj = item.trajectory if isinstance(item, Draft) else item
        if self.reason in _FLAG_GATES:
            flag, detail, hint = _FLAG_GATES[self.reason]
            return reject(traj, self.reason, detail, hint) if flag in traj.flags else None
        if self.reason == Reason.empty:
            roles = {s.role for s in traj.steps}
            if "user" not in roles or "assistant" not in roles:
                return reject(traj, Reason.empty, f"no {'user' if 'user' not in roles else 'assistant'} "
                                     "message", "a conversation needs a prompt and an answer")
            return None
        if isinstance(item, Draft) and self.reason in item.problems:
            detail, hint = item.problems[self.reason]
            return reject(traj, self.reason, detail, hint)
        return None


GATE_ORDER: tuple[Reason, ...] = (
    Reason.parse_error,
    Reason.truncated_file,
    Reason.empty,
    Reason.side_branch,
    Reason.subagent,
    Reason.unsupported_tool,
    Reason.unmappable_arguments,
    Reason.arguments_double_encoded,
    Reason.schema_violation,
    Reason.orphan_tool_result,
    Reason.missing_tool_result,
    Reason.aborted_or_error_turn,
    Reason.image_content,
    Reason.no_final_response,
)
GATES: tuple[Gate, ...] = tuple(Gate(r) for r in GATE_ORDER)
TRAJECTORY_GATES: tuple[Gate, ...] = GATES[:5]


def first_rejection(item: Draft | Trajectory, gates: tuple[Gate, ...] = GATES) -> Rejection | None:
    """Run ``gates`` in order; the first that fires decides."""
    for gate in gates:
        rej = gate.check(item)
        if rej is not None:
            return rej
    return None


__all__.append("TRAJECTORY_GATES")
