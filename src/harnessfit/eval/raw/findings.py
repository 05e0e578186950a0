"""What a raw checker reports: diagnostics (``findings`` in the results) with a closed code each, and a check that is
clean when none counts.

A diagnostic's ``severity`` says whether it makes its check unclean (``error`` and ``warning`` do) or is only recorded
(``note``: an advisory suggestion, e.g. the Svelte autofixer's "consider an attachment"). ``source`` names the tool
that produced it (``svelte``, ``rules``, ``autofixer``, ``py_compile``, ``ruff``, ``shape``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["Diagnostic", "Check"]


class Diagnostic(BaseModel):
    code: str
    message: str
    severity: Literal["error", "warning", "note"] = "error"
    source: str = "shape"
    line: int | None = None
    column: int | None = None


class Check(BaseModel):
    """One check of one answer: ``clean`` when no finding is an error or a warning."""

    clean: bool
    findings: list[Diagnostic] = Field(default_factory=list)

    @classmethod
    def of(cls, findings: Iterable[Diagnostic]) -> Check:
        items = list(findings)
        return cls(clean=not any(f.severity in ("error", "warning") for f in items), findings=items)

    def counted(self) -> list[Diagnostic]:
        """The findings that make the check unclean (notes left out)."""
        return [f for f in self.findings if f.severity != "note"]
