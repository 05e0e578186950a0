"""The code stays easy to read: small modules and functions in ``core``, ``formats``, ``convert``, ``dataset``,
stages that import down into ``core`` (never a format reader importing a stage), and no long function in ``eval``,
``harness``, ``serve`` and ``tokens`` either."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "harnessfit"
PACKAGES = ("core", "formats", "convert", "dataset")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
# the run side (episodes, harness capture, serving, tokenizing): a function over this many lines is split into
# named helpers (a dataclass for shared state, not closures over ``nonlocal``; a CLI command is its options + a call)
RUN_PACKAGES = ("eval", "harness", "serve", "tokens")
MAX_RUN_FUNCTION_LINES = 60
# function (path relative to src/harnessfit, ":" name) -> why it may be longer for now
LONG_FUNCTIONS_ALLOWED: dict[str, str] = {}  # "package/module.py:function": why it stays long


def _modules() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (SRC / pkg).rglob("*.py"))


def test_no_module_over_the_line_limit() -> None:
    long = {str(p.relative_to(SRC)): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"split these modules (over {MAX_MODULE_LINES} lines): {long}"


def test_no_function_over_the_line_limit() -> None:
    long = {}
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if n > MAX_FUNCTION_LINES:
                    long[f"{p.relative_to(SRC)}:{node.name}"] = n
    assert not long, f"split these functions (over {MAX_FUNCTION_LINES} lines): {long}"


def _long_functions(paths: list[Path], limit: int) -> dict[str, int]:
    """``file:function`` -> lines of every function (nested ones too) longer than ``limit`` lines."""
    long = {}
    for p in paths:
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if n > limit:
                    long[f"{p.relative_to(SRC).as_posix()}:{node.name}"] = n
    return long


def test_no_run_side_function_over_the_line_limit() -> None:
    paths = sorted(p for pkg in RUN_PACKAGES for p in (SRC / pkg).rglob("*.py"))
    long = _long_functions(paths, MAX_RUN_FUNCTION_LINES)
    unexpected = {name: n for name, n in long.items() if name not in LONG_FUNCTIONS_ALLOWED}
    assert not unexpected, f"split these functions (over {MAX_RUN_FUNCTION_LINES} lines): {unexpected}"
    stale = sorted(set(LONG_FUNCTIONS_ALLOWED) - set(long))
    assert not stale, f"these are no longer long: remove them from LONG_FUNCTIONS_ALLOWED: {stale}"


def test_core_and_formats_import_no_stage() -> None:
    stages = ("harnessfit.convert", "harnessfit.dataset", "harnessfit.train", "harnessfit.eval")
    found = []
    for pkg in ("core", "formats"):
        for p in sorted((SRC / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(p.read_text())):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                found += [f"{p.relative_to(SRC)}: {n}" for n in names if n.startswith(stages)]
    assert not found, found
