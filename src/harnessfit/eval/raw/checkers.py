"""The per-language checkers of raw suites: one class each, all with the same surface.

A checker takes the extracted code of many answers at once (the Svelte checker starts Node once per batch) and
returns, per answer, its compile check and its policy check — or, when the checker itself broke on that answer, a
one-line reason (the answer is then unscored, never counted as unclean). ``describe()`` is what the results file
records about the checker: tool versions and the policy's rules or configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from harnessfit.errors import UserError
from harnessfit.eval.raw.findings import Check

__all__ = ["CodeChecks", "BaseChecker", "checker_for", "LANGUAGES"]


@dataclass(frozen=True)
class CodeChecks:
    """Compile and policy checks of one piece of code; ``compiles`` is True when the compiler raised no error."""

    compile: Check
    policy: Check
    compiles: bool


class BaseChecker:
    """One language: the fence tags its answers may carry, and the compile and policy checks of its code."""

    language: ClassVar[str]
    tags: ClassVar[tuple[str, ...]]

    def check(self, codes: Sequence[str]) -> list[CodeChecks | str]:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        raise NotImplementedError


LANGUAGES = ("svelte", "python")


def checker_for(language: str) -> BaseChecker:
    """The checker of a suite's ``language``."""
    if language == "svelte":
        # import order: svelte.py and python.py import BaseChecker from this module
        from harnessfit.eval.raw.svelte import SvelteChecker

        return SvelteChecker()
    if language == "python":
        # import order: svelte.py and python.py import BaseChecker from this module
        from harnessfit.eval.raw.python import PythonChecker

        return PythonChecker()
    raise UserError(f"no raw checker for language {language!r}: use one of {', '.join(LANGUAGES)}")
