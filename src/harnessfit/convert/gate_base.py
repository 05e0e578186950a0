"""What a gate is: the ``GateFinding`` it lists, the ``Gate`` base class (and two shapes of it: a reader flag, several
reasons with a precedence), and the ledger row a gate's findings make. The gates themselves, their order and what a
``cut`` means are in ``convert.gates``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from harnessfit.convert.draft import Draft
from harnessfit.core.rejection import Reason, Rejection, reject

__all__ = ["GateFinding", "FlagGate", "Gate", "PrecedenceGate", "blocking_summary", "rejection_of"]


@dataclass(frozen=True, slots=True)
class GateFinding:
    """One problem a gate found: at trajectory step ``step`` (``None``: the trajectory as a whole), why, the source
    ``tool`` it is about (``None`` when it is about no call), and ``cut``: the first step it makes unusable
    (``None``: it limits no label; see the module docstring)."""

    step: int | None
    reason: Reason
    detail: str
    hint: str
    cut: int | None = 0
    tool: str | None = None


class Gate(ABC):
    """One check. Why a class per check: each owns its condition and its ledger wording, and the list ``GATES``
    alone decides which one wins; the builder never decides.

    Subclasses set ``name`` (and ``before_build`` if they need only the trajectory) and implement ``findings``."""

    name: ClassVar[str]
    before_build: ClassVar[bool] = False

    @abstractmethod
    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        """Every problem this gate sees, in the order the builder met them."""

    def verdict(self, findings: Sequence[GateFinding]) -> GateFinding:
        """The finding that names the ledger row (``findings`` is non-empty): by default the first."""
        return findings[0]

    def check(self, draft: Draft) -> Rejection | None:
        """The rejection this gate makes, or ``None``."""
        found = list(self.findings(draft))
        return rejection_of(draft, self, found, found) if found else None


class FlagGate(Gate):
    """Rejects a trajectory that carries a reader flag (``Trajectory.flags``): a fact only the reader could see."""

    before_build = True
    flag: ClassVar[str]
    reason: ClassVar[Reason]
    detail: ClassVar[str]
    hint: ClassVar[str]

    def cut(self, draft: Draft) -> int | None:
        return 0

    def findings(self, draft: Draft) -> Iterator[GateFinding]:
        if self.flag in draft.trajectory.flags:
            yield GateFinding(None, self.reason, self.detail, self.hint, cut=self.cut(draft))


def _by_precedence(findings: Sequence[GateFinding], order: Sequence[Reason]) -> GateFinding:
    """The first finding of the reason that comes first in ``order`` (reasons not in it come last)."""
    rank = {r: i for i, r in enumerate(order)}
    return min(findings, key=lambda f: rank.get(f.reason, len(rank)))


class PrecedenceGate(Gate):
    """A gate whose findings carry several reasons; its row names the most important one (``precedence``)."""

    precedence: ClassVar[tuple[Reason, ...]]

    def verdict(self, findings: Sequence[GateFinding]) -> GateFinding:
        return _by_precedence(findings, self.precedence)


def blocking_summary(findings: Sequence[GateFinding]) -> str:
    """Every blocking call with its count, by reason then tool, in first-seen order: ``"unsupported_tool: Glob ×3,
    Grep ×1; unmappable_result: Bash ×2"`` (findings about no call are left out)."""
    by_reason: dict[Reason, dict[str, int]] = {}
    for f in findings:
        if f.tool is not None:
            tools = by_reason.setdefault(f.reason, {})
            tools[f.tool] = tools.get(f.tool, 0) + 1
    return "; ".join(
        f"{r.value}: " + ", ".join(f"{t} ×{n}" for t, n in tools.items()) for r, tools in by_reason.items()
    )


def rejection_of(
    draft: Draft,
    gate: Gate,
    own: Sequence[GateFinding],
    every: Sequence[GateFinding],
    *,
    calls: int | None = None,
    labels: int | None = None,
) -> Rejection:
    """The ledger row ``gate`` makes from its findings ``own``: the verdict's reason and hint, its detail, and, when
    the trajectory has more than one blocking call, every one of them with its count (``every``)."""
    f = gate.verdict(own)
    detail = f.detail
    if sum(1 for x in every if x.tool is not None) > 1:
        detail = f"{detail} — every blocking call: {blocking_summary(every)}"
    return reject(draft.trajectory, f.reason, detail, f.hint, calls=calls, labels=labels)
