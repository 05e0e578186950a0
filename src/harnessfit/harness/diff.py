"""What differs between two HarnessCards, section by section, in words a user can act on.

``card_diff(a, b)`` compares two cards (``a`` the one a trace or a model was made for, ``b`` the target) and
returns a ``CardDiff``: one ``SectionDiff`` per section (``SECTIONS``: identity/runtime, cli, request, prompt,
tools, serialisation, results, errors, behaviour, session), each with ``identical`` and a list of changes in plain
sentences; the prompt section also carries a unified diff of the two templates (variables shown as ``{cwd}`` …).

Finer questions a converter asks — may a call recorded under ``a`` be replayed as ``b``? — are answered per tool
and per result/error text: ``tool_schema_identical(name)``, ``tool_identical(name)``, ``result_identical(key)``;
``tools`` and ``texts`` hold the per-item verdicts. ``to_json()`` is the ``--json`` form.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harnessfit.harness.card import HarnessCard

__all__ = ["SECTIONS", "SectionDiff", "ToolDiff", "TextDiff", "CardDiff", "card_diff", "prompt_template_text"]

SECTIONS = (
    "runtime",
    "cli",
    "request",
    "prompt",
    "tools",
    "serialisation",
    "results",
    "errors",
    "behaviour",
    "session",
)


@dataclass
class SectionDiff:
    """One section: whether it is identical, and what changed (sentences; ``unified`` for the prompt text)."""

    name: str
    changes: list[str] = field(default_factory=list)
    unified: str = ""

    @property
    def identical(self) -> bool:
        return not self.changes

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"identical": self.identical, "changes": self.changes}
        if self.unified:
            out["unified_diff"] = self.unified
        return out


@dataclass
class ToolDiff:
    """One tool: ``status`` is ``same``, ``changed``, ``added`` (only in b) or ``removed`` (only in a)."""

    name: str
    status: str
    schema_identical: bool
    description_identical: bool
    default_a: bool
    default_b: bool
    changes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "schema_identical": self.schema_identical,
            "description_identical": self.description_identical,
            "default": [self.default_a, self.default_b],
            "changes": self.changes,
        }


@dataclass
class TextDiff:
    """One result or error text (``kind`` ``results``/``errors``): its template in each card (None when absent)."""

    key: str
    kind: str
    a: str | None
    b: str | None

    @property
    def identical(self) -> bool:
        return self.a == self.b

    @property
    def status(self) -> str:
        if self.a == self.b:
            return "same"
        return "added" if self.a is None else "removed" if self.b is None else "changed"


@dataclass
class CardDiff:
    """The whole comparison (see the module docstring)."""

    a: str
    b: str
    sections: dict[str, SectionDiff]
    tools: dict[str, ToolDiff]
    texts: dict[str, TextDiff]

    @property
    def identical(self) -> bool:
        return all(s.identical for s in self.sections.values())

    def differing(self) -> list[str]:
        return [name for name, s in self.sections.items() if not s.identical]

    def tool_schema_identical(self, name: str) -> bool:
        """True when tool ``name`` exists in both cards with the same parameters schema (same JSON text, key order
        included: calls valid under one are valid under the other and render the same)."""
        tool = self.tools.get(name)
        return tool is not None and tool.status in ("same", "changed") and tool.schema_identical

    def tool_identical(self, name: str) -> bool:
        """True when tool ``name`` is sent identically by both (schema, description and every other field)."""
        tool = self.tools.get(name)
        return tool is not None and tool.status == "same"

    def result_identical(self, key: str) -> bool:
        """True when the result/error text ``key`` (``bash_exit_code``, ``validation_failed`` …) has the same
        template in both cards (a text missing from both counts as identical)."""
        text = self.texts.get(key)
        return text is None or text.identical

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "identical": self.identical,
            "differing_sections": self.differing(),
            "sections": {name: s.to_json() for name, s in self.sections.items()},
            "tools": {name: t.to_json() for name, t in self.tools.items()},
            "texts": {key: {"kind": t.kind, "status": t.status, "a": t.a, "b": t.b} for key, t in self.texts.items()},
        }

    def render(self) -> str:
        """The report ``harnessfit harness diff`` prints."""
        differ = self.differing()
        head = (
            f"{self.a} → {self.b}: identical"
            if not differ
            else f"{self.a} → {self.b}: {len(differ)} of {len(self.sections)} sections differ ({', '.join(differ)})"
        )
        out = [head]
        for name, section in self.sections.items():
            out.append("")
            out.append(f"== {name}: {'identical' if section.identical else 'differs'}")
            out += [f"  - {line}" for line in section.changes]
            if section.unified:
                out.append("")
                out += ["    " + line for line in section.unified.splitlines()]
        return "\n".join(out)


# -- helpers --------------------------------------------------------------------------------------------------


def _short(value: Any, limit: int = 120) -> str:
    if isinstance(value, str):
        text = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _value_diff(a: Any, b: Any, where: str = "") -> list[str]:
    """Leaf-level differences of two JSON values, as ``path: old → new`` lines (``(absent)`` for a missing key);
    a pure key-order change of an object is one line of its own."""
    if isinstance(a, dict) and isinstance(b, dict):
        lines: list[str] = []
        for key in list(a) + [k for k in b if k not in a]:
            path = f"{where}.{key}" if where else str(key)
            if key not in b:
                lines.append(f"{path}: {_short(a[key])} → (absent)")
            elif key not in a:
                lines.append(f"{path}: (absent) → {_short(b[key])}")
            else:
                lines += _value_diff(a[key], b[key], path)
        if not lines and list(a) != list(b):
            lines.append(f"{where or 'root'}: same keys in another order ({', '.join(a)} → {', '.join(b)})")
        return lines
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        lines = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            lines += _value_diff(x, y, f"{where}[{i}]")
        return lines
    if _json_text(a) == _json_text(b):
        return []
    return [f"{where or 'root'}: {_short(a)} → {_short(b)}"]


def _list_change(what: str, a: Iterable[str], b: Iterable[str]) -> list[str]:
    a, b = list(a), list(b)
    added = [x for x in b if x not in a]
    removed = [x for x in a if x not in b]
    out = []
    if added:
        out.append(f"{what} added: {', '.join(added)}")
    if removed:
        out.append(f"{what} removed: {', '.join(removed)}")
    if not added and not removed and a != b:
        out.append(f"{what}: same entries in another order")
    return out


def prompt_template_text(card: HarnessCard) -> str:
    """The system prompt with its variables as ``{name}`` (``{context}`` is the project-context section)."""
    return "".join(p["text"] if "text" in p else "{" + p["var"] + "}" for p in card.system_prompt.parts)


# -- sections -------------------------------------------------------------------------------------------------


def _runtime(a: HarnessCard, b: HarnessCard) -> SectionDiff:
    s = SectionDiff("runtime")
    if a.package != b.package:
        s.changes.append(
            f"npm package {a.package} → {b.package} (`harnessfit harness install pi --version {b.version}` picks it)"
        )
    if a.engines_node != b.engines_node:
        s.changes.append(
            f"Node.js requirement {a.engines_node or 'none'} → {b.engines_node or 'none'} "
            "(harnessfit installs a private node from npm where the machine's is older)"
        )
    return s


def _cli(a: HarnessCard, b: HarnessCard) -> SectionDiff:
    s = SectionDiff("cli")
    s.changes += _list_change("options", a.cli.get("options", []), b.cli.get("options", []))
    s.changes += _list_change("PI_* environment variables", a.cli.get("env", []), b.cli.get("env", []))
    fa, fb = a.cli.get("isolation_flags", []), b.cli.get("isolation_flags", [])
    if fa != fb:
        s.changes.append(f"unattended runs use {' '.join(fb)} (was {' '.join(fa)})")
    if a.cli.get("run_env") != b.cli.get("run_env"):
        s.changes.append(f"run environment {a.cli.get('run_env')} → {b.cli.get('run_env')}")
    s.changes += _list_change("json-mode event types", a.cli.get("json_events", []), b.cli.get("json_events", []))
    return s


def _request(a: HarnessCard, b: HarnessCard) -> SectionDiff:
    s = SectionDiff("request")
    if a.request.get("keys") != b.request.get("keys"):
        s.changes.append(f"body keys {', '.join(a.request.get('keys', []))} → {', '.join(b.request.get('keys', []))}")
    for line in _value_diff(a.request.get("params", {}), b.request.get("params", {})):
        s.changes.append(f"parameter {line}")
    return s


def _prompt(a: HarnessCard, b: HarnessCard) -> SectionDiff:
    s = SectionDiff("prompt")
    s.changes += _list_change("prompt variables", a.system_prompt.variables, b.system_prompt.variables)
    ta, tb = prompt_template_text(a), prompt_template_text(b)
    if ta != tb:
        diff = difflib.unified_diff(ta.splitlines(), tb.splitlines(), a.id, b.id, lineterm="", n=1)
        s.unified = "\n".join(diff)
        changed = sum(1 for ln in s.unified.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---")))
        s.changes.append(
            f"system prompt text differs ({changed} changed lines, unified diff below): training "
            f"prompts rendered for {a.id} are not what {b.id} sends"
        )
    for line in _value_diff(a.system_prompt.context.model_dump(), b.system_prompt.context.model_dump()):
        s.changes.append(f"context files (AGENTS.md …) rendered differently: {line}")
    return s


def _tools(a: HarnessCard, b: HarnessCard) -> tuple[SectionDiff, dict[str, ToolDiff]]:
    s = SectionDiff("tools")
    by_a = {t["function"]["name"]: t for t in a.tools}
    by_b = {t["function"]["name"]: t for t in b.tools}
    tools: dict[str, ToolDiff] = {}
    for name in list(by_a) + [n for n in by_b if n not in by_a]:
        ta, tb = by_a.get(name), by_b.get(name)
        da, db = name in a.default_tools, name in b.default_tools
        if ta is None or tb is None:
            status = "added" if ta is None else "removed"
            tools[name] = ToolDiff(name, status, False, False, da, db, [f"tool {status} in {b.id}"])
            s.changes.append(f"{name}: {'new tool' if ta is None else 'tool gone'} in {b.id}")
            continue
        fa, fb = ta["function"], tb["function"]
        schema_same = _json_text(fa.get("parameters")) == _json_text(fb.get("parameters"))
        desc_same = fa.get("description") == fb.get("description")
        changes = [f"parameters.{ln}" for ln in _value_diff(fa.get("parameters"), fb.get("parameters"))]
        if not desc_same:
            changes.append("description reworded")
        rest_a = {k: v for k, v in ta.items() if k != "function"} | {
            k: v for k, v in fa.items() if k not in ("parameters", "description")
        }
        rest_b = {k: v for k, v in tb.items() if k != "function"} | {
            k: v for k, v in fb.items() if k not in ("parameters", "description")
        }
        changes += _value_diff(rest_a, rest_b)
        same = _json_text(ta) == _json_text(tb)
        if same and not changes:
            status = "same"
        else:
            status = "changed"
            if not changes:
                changes.append("same content, different key order")
        tools[name] = ToolDiff(name, status, schema_same, desc_same, da, db, changes)
        if status == "changed":
            verdict = (
                "schema identical (calls valid under one are valid under the other)"
                if schema_same
                else "schema differs: recorded calls must be re-checked against the new schema"
            )
            s.changes.append(f"{name}: {verdict}; " + "; ".join(changes))
    s.changes += _list_change("default tools", a.default_tools, b.default_tools)
    return s, tools


def _texts(a: HarnessCard, b: HarnessCard, kind: str) -> tuple[SectionDiff, dict[str, TextDiff]]:
    s = SectionDiff(kind)
    da, db = getattr(a, kind), getattr(b, kind)
    texts: dict[str, TextDiff] = {}
    for key in list(da) + [k for k in db if k not in da]:
        t = TextDiff(key, kind, da.get(key), db.get(key))
        texts[key] = t
        if t.status == "added":
            s.changes.append(f"{key}: new in {b.id}: {_short(t.b)}")
        elif t.status == "removed":
            s.changes.append(f"{key}: not produced by {b.id} (was {_short(t.a)})")
        elif t.status == "changed":
            s.changes.append(f"{key}: {_short(t.a)} → {_short(t.b)}")
    return s, texts


def _serialisation(a: HarnessCard, b: HarnessCard) -> SectionDiff:
    s = SectionDiff("serialisation")
    s.changes += _value_diff(a.serialisation, b.serialisation)
    return s


def _behaviour(a: HarnessCard, b: HarnessCard) -> SectionDiff:
    """The captured probe calls: whether Pi ran each one, and what it answered (the capture's folder as {cwd})."""
    s = SectionDiff("behaviour")
    ex_a = {e["label"]: e for e in a.examples}
    ex_b = {e["label"]: e for e in b.examples}
    for label in list(ex_a) + [k for k in ex_b if k not in ex_a]:
        ea, eb = ex_a.get(label), ex_b.get(label)
        if ea is None or eb is None:
            continue  # a probe only one capture made says nothing about the difference
        call = f"{label} ({ea['name']} {_short(ea['arguments'], 60)})"
        if ea["ran"] != eb["ran"]:
            s.changes.append(
                f"{call}: {a.id} {'runs' if ea['ran'] else 'refuses'} it, "
                f"{b.id} {'runs' if eb['ran'] else 'refuses'} it: {_short(eb['result'])}"
            )
        elif ea["result"] != eb["result"]:
            s.changes.append(f"{call}: answer {_short(ea['result'], 80)} → {_short(eb['result'], 80)}")
    return s


def _session(a: HarnessCard, b: HarnessCard) -> SectionDiff:
    s = SectionDiff("session")
    sa, sb = a.session, b.session
    if sa.get("version") != sb.get("version"):
        s.changes.append(f"session file version {sa.get('version')} → {sb.get('version')}")
    s.changes += _list_change("header keys", sa.get("header_keys", []), sb.get("header_keys", []))
    for group, what in (
        ("entries", "entry type"),
        ("message_roles", "message role"),
        ("content_blocks", "content block"),
    ):
        ga, gb = sa.get(group, {}), sb.get(group, {})
        s.changes += _list_change(f"{what}s", ga, gb)
        for kind in (k for k in ga if k in gb):
            s.changes += _list_change(f"{what} {kind!r} keys", ga[kind], gb[kind])
    return s


def card_diff(a: HarnessCard, b: HarnessCard) -> CardDiff:
    """Compare card ``a`` with card ``b`` (see the module docstring)."""
    tools_section, tools = _tools(a, b)
    results_section, result_texts = _texts(a, b, "results")
    errors_section, error_texts = _texts(a, b, "errors")
    sections = {
        "runtime": _runtime(a, b),
        "cli": _cli(a, b),
        "request": _request(a, b),
        "prompt": _prompt(a, b),
        "tools": tools_section,
        "serialisation": _serialisation(a, b),
        "results": results_section,
        "errors": errors_section,
        "behaviour": _behaviour(a, b),
        "session": _session(a, b),
    }
    assert tuple(sections) == SECTIONS
    return CardDiff(a=a.id, b=b.id, sections=sections, tools=tools, texts={**result_texts, **error_texts})
