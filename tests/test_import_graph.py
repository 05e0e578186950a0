"""No import cycle between harnessfit's packages: every ``import`` of every module under src/harnessfit, those inside
functions included, is an edge ``harnessfit.<package> -> harnessfit.<package>``; the graph must have no cycle.

``ALLOWED_CYCLE_EDGES`` is empty: the last cycle (serve <-> train) went when the tool-call parser moved to
``models.toolcalls`` and the reward components to the top-level ``rewards`` package. A new cycle fails the test;
cut it by moving the shared piece below both packages, not by listing an edge here.

An import inside a function hides its module-level dependency; in every package and every module directly under
src/harnessfit (``FUNCTION_IMPORTS_CHECKED``) each function-level ``harnessfit`` import carries its reason in a
comment (on its line or on the comment line just above its block of imports): a heavy dependency it would pull at
import time (torch, transformers, trl, fastapi/uvicorn, numba…), a command loading its stage only when it runs, or a
real import-order need.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# (importer, imported) -> why the edge is still there. Removing the edge makes the graph acyclic.
ALLOWED_CYCLE_EDGES: dict[tuple[str, str], str] = {}

# the packages and top-level modules (``cli``, ``errors``, ``npm``, ``paths``) whose function-level harnessfit imports
# must each say why: all of them (``test_every_package_and_top_level_module_is_checked``)
FUNCTION_IMPORTS_CHECKED = (
    "cli",
    "convert",
    "core",
    "dataset",
    "demo",
    "endpoint",
    "errors",
    "eval",
    "formats",
    "harness",
    "models",
    "npm",
    "paths",
    "pipeline",
    "report",
    "rewards",
    "serve",
    "synth",
    "tasks",
    "tokens",
    "train",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(module: str) -> str | None:
    """``harnessfit.eval.episode_runner`` -> ``eval``; a top-level module (``harnessfit.cli``) is its own node."""
    parts = module.split(".")
    return parts[1] if parts[0] == "harnessfit" and len(parts) > 1 else None


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if not node.level:
            return [node.module or ""]
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        return [".".join(base + ([node.module] if node.module else []))]
    return []


def package_edges() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) package pairs, each with the places (file:line) that import across."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted((SRC / "harnessfit").rglob("*.py")):
        module = _module_name(path)
        source = _package(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _imported(node, module, path.name == "__init__.py"):
                imported = _package(target)
                if source and imported and imported != source:
                    edges[(source, imported)].append(f"{path.relative_to(SRC)}:{node.lineno}")
    return edges


def find_cycle(edges: set[tuple[str, str]]) -> list[str] | None:
    """One cycle of the directed graph as ``[a, b, …, a]``, or None."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_find_cycle_finds_one() -> None:
    assert find_cycle({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == ["a", "b", "c", "a"]
    assert find_cycle({("a", "b"), ("b", "c"), ("a", "c")}) is None


def test_the_relative_imports_are_resolved() -> None:
    assert _imported(ast.parse("from ..core import x").body[0], "harnessfit.eval.raw.run", False) == [
        "harnessfit.eval.core"
    ]
    assert _imported(ast.parse("from . import y").body[0], "harnessfit.eval", True) == ["harnessfit.eval"]


def test_no_cycle_between_packages() -> None:
    edges = package_edges()
    assert ("eval", "harness") in edges  # the walk sees the imports (a broken walk would find no cycle either)
    kept = set(edges) - set(ALLOWED_CYCLE_EDGES)
    cycle = find_cycle(kept)
    where = {" -> ".join(pair): edges[pair][:3] for pair in pairwise(cycle)} if cycle else {}
    assert cycle is None, f"package import cycle {' -> '.join(cycle or [])}: {where}"


def test_the_allowed_edges_are_still_needed() -> None:
    """A listed edge that no import makes any more, or whose removal no longer breaks a cycle, is deleted here."""
    edges = set(package_edges())
    for pair in ALLOWED_CYCLE_EDGES:
        assert pair in edges, f"{pair} is no longer imported: remove it from ALLOWED_CYCLE_EDGES"
        others = edges - set(ALLOWED_CYCLE_EDGES) | {pair}
        assert find_cycle(others) is not None, f"{pair} closes no cycle any more: remove it from ALLOWED_CYCLE_EDGES"


def _function_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    out: list[ast.Import | ast.ImportFrom] = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out += [n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))]
    return out


def _has_reason(lines: list[str], lineno: int) -> bool:
    """A comment on the import's line, or on the comment line above the contiguous block of imports it is in."""
    if "#" in lines[lineno - 1]:
        return True
    i = lineno - 2
    while i >= 0 and lines[i].lstrip().startswith(("from ", "import ")):
        i -= 1
    return i >= 0 and lines[i].lstrip().startswith("#")


def unexplained_function_imports(packages: tuple[str, ...]) -> list[str]:
    """file:line of each function-level harnessfit import in ``packages`` that gives no reason."""
    found: list[str] = []
    for path in sorted((SRC / "harnessfit").rglob("*.py")):
        module = _module_name(path)
        if _package(module) not in packages:
            continue
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in _function_imports(ast.parse(text)):
            targets = _imported(node, module, path.name == "__init__.py")
            if any(t == "harnessfit" or t.startswith("harnessfit.") for t in targets) and not _has_reason(
                lines, node.lineno
            ):
                found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return found


def test_the_reason_check_reads_comments() -> None:
    lines = [
        "def f():",
        "    # combine needs this module's names first",
        "    from a import b",
        "    from c import d",
        "def g():",
        "    x = 1",
        "    from e import f",
    ]
    assert _has_reason(lines, 3) and _has_reason(lines, 4)
    assert not _has_reason(lines, 7)


def test_function_level_imports_say_why() -> None:
    """Lift an import to module level where no cycle results; keep it in the function only for a heavy optional
    dependency (torch, transformers, trl, peft, vllm) or a real import-order need, and say which in a comment."""
    missing = unexplained_function_imports(FUNCTION_IMPORTS_CHECKED)
    assert not missing, f"function-level harnessfit imports without a reason: {missing}"


def package_nodes() -> set[str]:
    """The graph's nodes: every package under src/harnessfit and every module directly in it (``cli.py`` -> ``cli``)."""
    root = SRC / "harnessfit"
    packages = {p.parent.name for p in root.glob("*/__init__.py")}
    modules = {p.stem for p in root.glob("*.py") if p.name != "__init__.py"}
    return packages | modules


def test_every_package_and_top_level_module_is_checked() -> None:
    nodes = package_nodes()
    assert {"cli", "errors", "eval", "train"} <= nodes  # top-level modules are nodes beside the packages
    assert _package(_module_name(SRC / "harnessfit" / "cli.py")) == "cli"
    assert set(FUNCTION_IMPORTS_CHECKED) == nodes, (
        f"not checked: {sorted(nodes - set(FUNCTION_IMPORTS_CHECKED))}; "
        f"no such package: {sorted(set(FUNCTION_IMPORTS_CHECKED) - nodes)}"
    )
