"""Canonical tool-call arguments: the form Pi actually executes after repairing a call it accepts only by repair.

Why: Pi runs some calls only after fixing them (the card's validator reports these as *warnings*: legacy
``{path, oldText, newText}`` edits, ``edits`` sent as a JSON string, ``"10"`` for a number, properties the schema
does not list). A model trained on the repaired shape would learn calls the schema does not describe and that the
next Pi version may refuse; so the converter replaces the arguments with what Pi executes and records one
``repaired:<warning code>`` transformation per kind of repair (see ``convert.wire``).

The repairs are the card's own (``HarnessCard.repair_arguments``: edit preparation and TypeBox-style coercion),
applied to a copy; properties Pi ignores are removed; keys follow the schema's order.
"""

from __future__ import annotations

from typing import Any

from harnessfit.harness.card import HarnessCard, Violation

__all__ = ["canonical_arguments"]


def _in_schema_order(value: Any, schema: dict[str, Any]) -> Any:
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        props = schema["properties"]
        return {k: _in_schema_order(value[k], props[k]) for k in props if k in value}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_in_schema_order(v, schema["items"]) for v in value]
    return value


def canonical_arguments(
    card: HarnessCard, name: str, arguments: dict[str, Any], warnings: list[Violation]
) -> dict[str, Any]:
    """``arguments`` as Pi executes them, given the validator's ``warnings`` for the call (``[]``: returned as is).

    Only object arguments reach here (mappings emit dicts); errors are not repaired (the converter rejects them)."""
    schema = card.schema(name)
    if not warnings or schema is None:
        return arguments
    args, _, _ = card.repair_arguments(name, arguments)
    # properties the schema does not list are ignored by Pi (its tools destructure only their own): drop them
    return _in_schema_order(args, schema)
