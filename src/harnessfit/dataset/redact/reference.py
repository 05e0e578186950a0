"""The plain engine: what a text holds, by the plainest reading of the rules — each rule in order over the whole
text (``Rule.find``: ``finditer``, then the rule's ``accept``), no guards, no anchors, no joined texts, no memory.
It is the definition the fast engine (``fast.Scanner``) must equal, and the one to read."""

from __future__ import annotations

from collections.abc import Sequence

from harnessfit.dataset.redact.rule import PluginRule, Rule

__all__ = ["findings"]


def findings(rules: Sequence[Rule | PluginRule], text: str) -> list[tuple[str, str]]:
    """(kind, value) for every finding of every rule in ``text``: rule by rule, left to right within a rule."""
    return [(rule.kind, value) for rule in rules for value in rule.find(text)]
