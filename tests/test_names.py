"""One meaning per noun (issue 31, item 4): a public class or type alias is defined in one module of ``src/`` only, so
a name read anywhere means one thing; and no package holds both ``run.py`` and ``runner.py`` (a stage's entry point
lives in a file named for it, not beside a look-alike)."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "harnessfit"

SAME_NOUN = {
    "ToolCall": "one tool call in two schemas: as the source recorded it (core.trajectory) and as the OpenAI wire "
    "carries it (serve.protocol)",
    "Score": "a value or the reason there is none: a reward component's (rewards) and a registered eval "
    "metric's (eval.episode)",
    "Responder": "a scripted model's plan of replies: the serving side's (harness.scripted, a list or a function) "
    "and the eval's scripted models (eval.scripted_models, the function form)",
}
"""Names defined twice on purpose: the same noun with the same meaning in two layers, each with its reason."""

_CAMEL = re.compile(r"[A-Z][a-z0-9]+[A-Za-z0-9]*")


def _nouns(tree: ast.Module) -> list[str]:
    """The module's public classes and CamelCase type aliases (``Name = tuple[...]``, ``Name = Literal[...]``)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            found.append(node.name)
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Subscript | ast.BinOp)
        ):
            found.append(node.targets[0].id)
    return [n for n in found if _CAMEL.fullmatch(n)]


def test_each_public_noun_is_defined_once() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        for name in _nouns(ast.parse(path.read_text(encoding="utf-8"))):
            where[name].append(str(path.relative_to(SRC)))
    twice = {name: files for name, files in where.items() if len(files) > 1 and name not in SAME_NOUN}
    assert not twice, f"one noun, several definitions (rename one, or list it in SAME_NOUN with its reason): {twice}"
    assert all(len(where[name]) > 1 for name in SAME_NOUN), "a SAME_NOUN entry is no longer defined twice: drop it"


def test_no_run_beside_runner() -> None:
    both = [
        str(d.relative_to(SRC)) for d in sorted({p.parent for p in SRC.rglob("run.py")}) if (d / "runner.py").exists()
    ]
    assert not both, f"run.py beside runner.py in {both}: name the files for their entry points"
