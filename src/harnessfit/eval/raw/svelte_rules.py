"""harnessfit's modern-Svelte (5, runes) policy rules, over the AST of ``svelte.parse(code, {modern: true})``.

Each rule is one finding code; a component is policy-clean when none applies (and the autofixer, run beside these
rules, has no issue either). The parser reads legacy syntax, so these rules judge a component even when it does not
compile in runes mode — a Svelte 4 component fails both checks, for separate reasons.

- ``legacy_export_let`` — ``export let`` / ``export var`` props in the instance script: use ``$props()``.
- ``legacy_reactive_statement`` — a ``$:`` statement: use ``$derived`` or ``$effect``.
- ``legacy_event_directive`` — ``on:event={…}``: use the event attribute (``onclick={…}``).
- ``legacy_slot`` — ``<slot>``, ``slot="…"`` or ``let:`` directives: use snippets and ``{@render …}``.
- ``legacy_event_dispatcher`` — ``createEventDispatcher``: use callback props.
- ``legacy_lifecycle`` — ``beforeUpdate`` / ``afterUpdate``: use ``$effect.pre`` / ``$effect``.
- ``legacy_store`` — ``writable`` / ``readable`` / ``derived`` from ``svelte/store``: use ``$state`` / ``$derived``.
- ``legacy_dollar_props`` — ``$$props``, ``$$restProps``, ``$$slots``: use ``$props()`` (with a rest element).
- ``legacy_svelte_component`` / ``legacy_svelte_self`` — ``<svelte:component>`` / ``<svelte:self>``: components are
  dynamic values in runes mode; import the component itself for recursion.
- ``state_without_rune`` — a top-level ``let`` that is reassigned and shown in the markup but not declared with
  ``$state(…)`` (so the markup never updates). Names are matched without scope analysis: a parameter that shadows
  the variable counts as the variable.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Any

from harnessfit.eval.raw.findings import Diagnostic

__all__ = ["POLICY_RULES", "policy_findings", "LineIndex"]

POLICY_RULES: dict[str, str] = {
    "legacy_export_let": "`export let` props: use `$props()`",
    "legacy_reactive_statement": "`$:` statement: use `$derived` or `$effect`",
    "legacy_event_directive": "`on:` event directive: use the event attribute (`onclick={…}`)",
    "legacy_slot": "slots (`<slot>`, `slot=`, `let:`): use snippets and `{@render}`",
    "legacy_event_dispatcher": "`createEventDispatcher`: use callback props",
    "legacy_lifecycle": "`beforeUpdate`/`afterUpdate`: use `$effect.pre`/`$effect`",
    "legacy_store": "stores from `svelte/store`: use `$state`/`$derived`",
    "legacy_dollar_props": "`$$props`/`$$restProps`/`$$slots`: use `$props()`",
    "legacy_svelte_component": "`<svelte:component>`: components are dynamic in runes mode",
    "legacy_svelte_self": "`<svelte:self>`: import the component itself",
    "state_without_rune": "reassigned variable shown in the markup without `$state`",
}

_RUNES = frozenset({"$state", "$derived", "$props", "$bindable"})
_LIFECYCLE = frozenset({"beforeUpdate", "afterUpdate"})
_STORES = frozenset({"writable", "readable", "derived"})
_DOLLAR_PROPS = frozenset({"$$props", "$$restProps", "$$slots"})


class LineIndex:
    """Line/column (1-based line, 0-based column) of a Svelte AST offset, which counts UTF-16 code units."""

    def __init__(self, code: str) -> None:
        self._starts = [0]
        pos = 0
        for ch in code:
            pos += 2 if ord(ch) > 0xFFFF else 1
            if ch == "\n":
                self._starts.append(pos)

    def at(self, offset: Any) -> tuple[int | None, int | None]:
        if not isinstance(offset, int):
            return None, None
        line = bisect.bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1]


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every AST node (a dict with a ``type``) under ``node``, depth first, in source order."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "type" in item:
                yield item
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def _is_rune_call(node: Any) -> bool:
    if not isinstance(node, dict) or node.get("type") != "CallExpression":
        return False
    callee = node.get("callee") or {}
    if callee.get("type") == "MemberExpression":
        callee = callee.get("object") or {}
    return callee.get("type") == "Identifier" and callee.get("name") in _RUNES


def _script_body(ast: dict[str, Any], key: str) -> list[dict[str, Any]]:
    script = ast.get(key) or {}
    return list((script.get("content") or {}).get("body") or [])


def policy_findings(ast: dict[str, Any], code: str) -> list[Diagnostic]:
    """Every policy finding of one parsed component, in source order of the rules above."""
    index = LineIndex(code)
    found: list[Diagnostic] = []

    def add(rule: str, node: dict[str, Any], detail: str = "") -> None:
        line, column = index.at(node.get("start"))
        found.append(
            Diagnostic(
                code=rule,
                message=POLICY_RULES[rule] + (f" ({detail})" if detail else ""),
                source="rules",
                line=line,
                column=column,
            )
        )

    instance = _script_body(ast, "instance")
    for stmt in instance:
        decl = stmt.get("declaration") or {}
        if (
            stmt.get("type") == "ExportNamedDeclaration"
            and decl.get("type") == "VariableDeclaration"
            and decl.get("kind") in ("let", "var")
        ):
            names = [d.get("id", {}).get("name") for d in decl.get("declarations") or []]
            add("legacy_export_let", stmt, ", ".join(n for n in names if n))
        if stmt.get("type") == "LabeledStatement" and (stmt.get("label") or {}).get("name") == "$":
            add("legacy_reactive_statement", stmt)
    for stmt in instance + _script_body(ast, "module"):
        if stmt.get("type") != "ImportDeclaration":
            continue
        source = (stmt.get("source") or {}).get("value")
        for spec in stmt.get("specifiers") or []:
            name = (spec.get("imported") or {}).get("name")
            if source == "svelte" and name == "createEventDispatcher":
                add("legacy_event_dispatcher", spec)
            elif source == "svelte" and name in _LIFECYCLE:
                add("legacy_lifecycle", spec, name)
            elif source == "svelte/store" and name in _STORES:
                add("legacy_store", spec, name)

    fragment = ast.get("fragment") or {}
    for node in _walk(fragment):
        kind = node.get("type")
        if kind == "OnDirective":
            add("legacy_event_directive", node, f"on:{node.get('name')}")
        elif kind == "SlotElement":
            add("legacy_slot", node, "<slot>")
        elif kind == "LetDirective":
            add("legacy_slot", node, f"let:{node.get('name')}")
        elif kind == "Attribute" and node.get("name") == "slot":
            add("legacy_slot", node, "slot=")
        elif kind == "SvelteComponent":
            add("legacy_svelte_component", node)
        elif kind == "SvelteSelf":
            add("legacy_svelte_self", node)
    for node in _walk([ast.get("instance"), ast.get("module"), fragment]):
        if node.get("type") == "Identifier" and node.get("name") in _DOLLAR_PROPS:
            add("legacy_dollar_props", node, node["name"])

    _state_without_rune(ast, instance, fragment, add)
    order = list(POLICY_RULES)
    found.sort(key=lambda f: (order.index(f.code), f.line or 0, f.column or 0))
    return found


def _state_without_rune(ast: dict[str, Any], instance: list[dict[str, Any]], fragment: dict[str, Any], add) -> None:
    plain: dict[str, dict[str, Any]] = {}
    for stmt in instance:
        if stmt.get("type") == "VariableDeclaration" and stmt.get("kind") == "let":
            for d in stmt.get("declarations") or []:
                ident = d.get("id") or {}
                if ident.get("type") == "Identifier" and not _is_rune_call(d.get("init")):
                    plain[ident["name"]] = ident
    if not plain:
        return
    assigned: set[str] = set()
    for node in _walk([ast.get("instance"), fragment]):
        target = None
        if node.get("type") == "AssignmentExpression":
            target = node.get("left")
        elif node.get("type") == "UpdateExpression":
            target = node.get("argument")
        elif node.get("type") == "BindDirective":
            target = node.get("expression")
        if isinstance(target, dict) and target.get("type") == "Identifier":
            assigned.add(target.get("name"))
    shown = {n.get("name") for n in _walk(fragment) if n.get("type") == "Identifier"}
    for name, ident in plain.items():
        if name in assigned and name in shown:
            add("state_without_rune", ident, name)
