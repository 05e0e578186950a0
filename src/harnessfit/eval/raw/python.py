"""The Python checker: ``py_compile`` (the running interpreter's compiler) and ruff (pinned) as the policy.

- compile: ``py_compile.compile(…, doraise=True)``. A ``SyntaxError`` (or ``IndentationError``/``TabError``) or any
  warning the compiler emits (``SyntaxWarning``: an invalid escape sequence, ``is`` with a literal, …) makes it
  unclean; ``compiles`` counts error-free code.
- policy: ``ruff check --isolated`` with the rule selection below (so no project configuration can change it), on
  all answers of a run at once. Code ruff cannot parse fails with ruff's own ``invalid-syntax``.
"""

from __future__ import annotations

import json
import py_compile
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harnessfit.errors import UserError
from harnessfit.eval.raw.checkers import BaseChecker, CodeChecks
from harnessfit.eval.raw.findings import Check, Diagnostic
from harnessfit.eval.raw.toolchain import ruff_binary, ruff_version

__all__ = ["PythonChecker", "RUFF_SELECT", "RUFF_IGNORE", "RUFF_TARGET", "RUFF_LINE_LENGTH"]

# pycodestyle, pyflakes, bugbear, pyupgrade, simplify, comprehensions, ruff's own, and type annotations (the suites
# ask for type hints); ``Any`` is allowed.
RUFF_SELECT = ("E", "W", "F", "B", "UP", "SIM", "C4", "RUF", "ANN")
RUFF_IGNORE = ("ANN401",)
RUFF_TARGET = "py311"
RUFF_LINE_LENGTH = 100


def compile_check(path: Path, cfile: Path) -> tuple[Check, bool]:
    """``py_compile`` one file: (check, compiles)."""
    findings: list[Diagnostic] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            py_compile.compile(str(path), cfile=str(cfile), doraise=True)
            compiles = True
        except py_compile.PyCompileError as exc:
            compiles = False
            err = exc.exc_value
            findings.append(
                Diagnostic(
                    code=exc.exc_type_name,
                    message=getattr(err, "msg", None) or str(err),
                    source="py_compile",
                    line=getattr(err, "lineno", None),
                    column=getattr(err, "offset", None),
                )
            )
    for w in caught:
        findings.append(
            Diagnostic(
                code=w.category.__name__, message=str(w.message), severity="warning", source="py_compile", line=w.lineno
            )
        )
    return Check.of(findings), compiles


class PythonChecker(BaseChecker):
    language = "python"
    tags = ("python", "py", "python3")

    def describe(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "fence_tags": list(self.tags),
            "python": ".".join(map(str, sys.version_info[:3])),
            "ruff": ruff_version(),
            "compile": "py_compile.compile(doraise=True); errors and compiler warnings count",
            "ruff_select": list(RUFF_SELECT),
            "ruff_ignore": list(RUFF_IGNORE),
            "ruff_target": RUFF_TARGET,
            "ruff_line_length": RUFF_LINE_LENGTH,
        }

    def ruff(self, folder: Path) -> list[dict[str, Any]]:
        cmd = [
            str(ruff_binary()),
            "check",
            "--isolated",
            "--no-cache",
            "--output-format",
            "json",
            "--target-version",
            RUFF_TARGET,
            "--line-length",
            str(RUFF_LINE_LENGTH),
            "--select",
            ",".join(RUFF_SELECT),
            "--ignore",
            ",".join(RUFF_IGNORE),
            str(folder),
        ]
        proc = subprocess.run(cmd, capture_output=True, timeout=300)
        if proc.returncode not in (0, 1):
            why = proc.stderr.decode(errors="replace").strip()[:300]
            raise UserError(f"ruff failed (exit {proc.returncode}): {why}")
        return json.loads(proc.stdout or b"[]")

    def check(self, codes: Sequence[str]) -> list[CodeChecks | str]:
        if not codes:
            return []
        with tempfile.TemporaryDirectory(prefix="harnessfit-raw-py-") as tmp:
            src, out = Path(tmp) / "answers", Path(tmp) / "pyc"
            src.mkdir()
            out.mkdir()
            paths = [src / f"answer_{i:05d}.py" for i in range(len(codes))]
            for path, code in zip(paths, codes, strict=True):
                path.write_text(code + ("" if code.endswith("\n") else "\n"), encoding="utf-8")
            compiled = [compile_check(p, out / (p.stem + ".pyc")) for p in paths]
            by_file: dict[str, list[Diagnostic]] = {p.name: [] for p in paths}
            for d in self.ruff(src):
                loc = d.get("location") or {}
                code = d.get("code")
                by_file.setdefault(Path(d.get("filename", "")).name, []).append(
                    Diagnostic(
                        code=code or "invalid-syntax",
                        message=str(d.get("message", "")),
                        source="ruff",
                        line=loc.get("row"),
                        column=loc.get("column"),
                    )
                )
        results: list[CodeChecks | str] = []
        for path, (check, compiles) in zip(paths, compiled, strict=True):
            results.append(CodeChecks(compile=check, policy=Check.of(by_file[path.name]), compiles=compiles))
        return results
