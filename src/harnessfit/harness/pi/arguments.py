"""Pi's handling of tool-call arguments, emulated: the part of ``HarnessCard.validate_call`` a second harness replaces.

Pi parses the argument text (JSON, then a string repair, then partial-JSON completion, else ``{}``; 1.x refuses
what is not one complete JSON object), unwraps ``edits`` given as a JSON string or as legacy ``{oldText, newText}``,
coerces types as TypeBox's ``Value.Convert`` does, and then validates against the tool's schema, ignoring properties
the schema does not name. ``validate_call`` returns what Pi would do with a call as ``Violation``s (errors: Pi answers
with an error instead of running the tool; warnings: it repairs the call and runs it); ``repair_arguments`` what it
executes. The card holds the schemas and their compiled validators (``HarnessCard.tool_validator``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from harnessfit.harness.card import HarnessCard, Violation, ViolationCode, from_schema_error, violation

__all__ = ["validate_call", "repair_arguments"]


def repair_arguments(
    card: HarnessCard, name: str, arguments: dict[str, Any]
) -> tuple[dict[str, Any], list[Violation], list[str]]:
    """Pi's own repairs applied to a copy of ``arguments`` (a known tool's object arguments): ``edits`` given as a
    JSON string or as legacy ``{oldText, newText}`` (edit only), then TypeBox-style type coercion. Returns the
    repaired copy, the edit notes and the coercion notes — what Pi executes, and why. The caller's ``arguments``
    are never changed; when nothing needs coercing the copy shares their nested values (treat it as read-only)."""
    schema = card.schema(name)
    args = dict(arguments)  # _prepare_edit only replaces top-level keys, so a shallow copy keeps the caller's
    notes: list[Violation] = []
    if name == "edit":
        args, notes = _prepare_edit(args)
    entry = card.tool_validator(name)
    if entry is not None and entry[2] is not None and entry[2](args):
        return args, notes, []  # every value already has its schema type: _coerce would change nothing
    args, coerced = _coerce(json.loads(json.dumps(args)), schema, "")  # _coerce writes into a deep copy
    return args, notes, coerced


def validate_call(card: HarnessCard, name: str, arguments: str | dict | Any, active: Sequence[str]) -> list[Violation]:
    """Check one tool call the way Pi would: errors mean Pi answers with an error instead of running the tool,
    warnings mean Pi repairs the call and runs it. ``[]`` means the call is clean."""
    entry = card.tool_validator(name) if name in active else None
    if entry is None:
        return [violation(ViolationCode.unknown_tool, f"tool {name!r} is not active (active: {', '.join(active)})")]
    schema, validator, clean = entry
    if (
        clean is not None
        and type(arguments) is dict
        and clean(arguments)
        and not (name == "edit" and not arguments["edits"])
    ):
        return []  # exactly the schema's shape: no repair, no coercion, no error (the common case, no copying)
    found: list[Violation] = []
    if isinstance(arguments, (str, bytes)):
        text = arguments.decode("utf-8", "replace") if isinstance(arguments, bytes) else arguments
        parsed, note = _parse_like_pi(text)
        if (
            note is not None
            and card.strict_arguments
            and note.code in (ViolationCode.repaired_truncated_json, ViolationCode.invalid_json)
        ):
            # pi-ai 1.x (parseToolCallArguments) completes no partial JSON: the call is answered with
            # the invalid_arguments text and never runs
            return found + [
                Violation(
                    code=ViolationCode.invalid_json,
                    severity="error",
                    detail=f"arguments are not complete JSON; Pi {card.version} refuses them",
                )
            ]
        if note is not None:
            found.append(note)
    else:
        parsed = arguments
    if isinstance(parsed, str):
        try:
            inner = json.loads(parsed)
        except ValueError:
            inner = None
        if isinstance(inner, dict):
            return found + [
                violation(ViolationCode.arguments_double_encoded, "arguments are a JSON string holding an object")
            ]
        return found + [violation(ViolationCode.arguments_not_object, "arguments are a string, not an object")]
    if not isinstance(parsed, dict):
        return found + [
            violation(ViolationCode.arguments_not_object, f"arguments are {type(parsed).__name__}, not an object")
        ]
    args, notes, coerced = repair_arguments(card, name, parsed)
    found += notes
    if name == "edit" and args.get("edits") == []:  # coercion never empties a list, so checking after it is the same
        found.append(violation(ViolationCode.invalid_value, "edits is empty; Pi's edit tool refuses it"))
    found += [violation(ViolationCode.coerced_type, d) for d in coerced]
    # a value of exactly the schema's shape has no schema error (what the clean predicate means), so the
    # validator only runs on the others
    errors = [] if clean is not None and clean(args) else list(validator.iter_errors(args))
    if len(errors) > 1:
        errors.sort(key=lambda e: list(e.absolute_path))
    for err in errors:
        found.append(from_schema_error(err))
    if not any(v.code == ViolationCode.unexpected_property for v in found):
        props = schema.get("properties", {})
        for key in args:
            if key not in props and schema.get("additionalProperties", True) is not False:
                found.append(
                    violation(ViolationCode.ignored_property, f"property {key!r} is not in the schema; Pi ignores it")
                )
    if any(v.code == ViolationCode.invalid_json for v in found) and not any(
        v.severity == "error" and v.code != ViolationCode.invalid_json for v in found
    ):
        # Pi parsed the broken text as {} and the tool would accept that: it runs, so only a warning
        found = [
            v if v.code != ViolationCode.invalid_json else Violation(code=v.code, severity="warning", detail=v.detail)
            for v in found
        ]
    return found


def _parse_like_pi(text: str) -> tuple[Any, Violation | None]:
    """Parse argument text as Pi does: JSON, then string repair, then partial-JSON completion, else ``{}``."""
    if not text.strip():
        return {}, None
    try:
        return json.loads(text), None
    except ValueError:
        pass
    try:
        return json.loads(text, strict=False), violation(
            ViolationCode.repaired_json_string, "raw control characters in strings"
        )
    except ValueError:
        pass
    completed = _complete_partial_json(text)
    if completed is not None:
        try:
            return json.loads(completed, strict=False), violation(
                ViolationCode.repaired_truncated_json, "truncated JSON; Pi completes it"
            )
        except ValueError:
            pass
    return {}, violation(ViolationCode.invalid_json, "arguments are not JSON; Pi treats them as {}")


def _complete_partial_json(text: str) -> str | None:
    """Close an unterminated string and open brackets of JSON cut short; None when it is not a JSON prefix."""
    stack: list[str] = []
    in_str = False
    esc = False
    s = text.rstrip()
    if not s or s[0] not in "{[":
        return None
    for ch in s:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":  # noqa: SIM102 - the pop is this branch's work, not part of its test
            if not stack or stack.pop() != ch:
                return None
    out = s
    if in_str:
        out += '"'
    out = out.rstrip()
    if out.endswith(","):
        out = out[:-1]
    if out.endswith(":"):
        out += "null"
    return out + "".join(reversed(stack))


def _prepare_edit(args: dict[str, Any]) -> tuple[dict[str, Any], list[Violation]]:
    notes: list[Violation] = []
    if isinstance(args.get("edits"), str):
        try:
            inner = json.loads(args["edits"])
        except ValueError:
            inner = None
        if isinstance(inner, list):
            args["edits"] = inner
            notes.append(violation(ViolationCode.edits_json_string, "edits was a JSON string; Pi unwraps it"))
    if isinstance(args.get("oldText"), str) and isinstance(args.get("newText"), str):
        edits = list(args["edits"]) if isinstance(args.get("edits"), list) else []
        edits.append({"oldText": args.pop("oldText"), "newText": args.pop("newText")})
        args["edits"] = edits
        notes.append(
            violation(ViolationCode.legacy_edit_arguments, "{path, oldText, newText}; Pi converts it to edits[]")
        )
    return args, notes


_JS_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def _js_number_text(value: float | int) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _coerce_scalar(value: Any, typ: str) -> Any:
    """TypeBox ``Value.Convert`` for one value (what Pi runs on tool arguments before validating them)."""
    if typ in ("number", "integer"):
        num: Any = value
        if value is None:
            num = 0
        elif isinstance(value, bool):
            num = 1 if value else 0
        elif isinstance(value, str):
            text = value.strip()
            if text == "":
                num = 0
            elif _JS_NUMBER.fullmatch(text):
                f = float(text)
                num = int(f) if f.is_integer() and abs(f) < 2**53 else f
            elif text.lower() in ("true", "false"):
                num = 1 if text.lower() == "true" else 0
        if typ == "integer" and isinstance(num, float) and not num.is_integer():
            return value
        return num
    if typ == "boolean":
        if value is None:
            return False
        if isinstance(value, str):
            low = value.lower()
            if low in ("true", "false"):
                return low == "true"
            if value in ("0", "1"):
                return value == "1"
        if not isinstance(value, bool) and isinstance(value, (int, float)) and value in (0, 1):
            return value == 1
        return value
    if typ == "string":
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, float)):
            return _js_number_text(value)
        return value
    if typ == "array" and not isinstance(value, list):
        return [value]
    return value


def _matches(value: Any, typ: str) -> bool:
    return {
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "string": isinstance(value, str),
        "null": value is None,
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }.get(typ, False)


def _coerce(value: Any, schema: dict[str, Any], where: str) -> tuple[Any, list[str]]:
    """Pi's type coercion (string ↔ number/boolean, null → zero value), reporting every change."""
    notes: list[str] = []
    typ = schema.get("type")
    types = [typ] if isinstance(typ, str) else list(typ or [])
    if types and not any(_matches(value, t) for t in types):
        for t in types:
            new = _coerce_scalar(value, t)
            if new is not value and _matches(new, t):
                notes.append(f"{where or 'root'}: {json.dumps(value)} coerced to {t}")
                value = new
                break
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key in value:
                value[key], more = _coerce(value[key], sub, f"{where}.{key}" if where else key)
                notes += more
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            value[i], more = _coerce(item, schema["items"], f"{where}[{i}]")
            notes += more
    return value, notes
