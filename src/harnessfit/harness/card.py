"""HarnessCard: the contract of one harness version — what it sends and what it accepts — captured from the real CLI.

A card is what every later stage renders against: the converter builds wire conversations with its system prompt,
tool schemas and result texts; the validator gates tool calls with ``validate_call``; eval compares against it.
This module is the card model; how a call is checked is the card's harness's (``harness.base.Harness.validate_call``;
Pi's argument parsing, repair and coercion are ``harness/pi/arguments.py``).
It is stored as JSON (``cards/<harness>-<version>.json``, key order kept) and identified by ``id`` + ``sha256``;
``format`` is the card layout version (``CARD_FORMAT``; ``load_card`` refuses a format it cannot read).

Identity and switches: ``profile`` (``None``, or a card profile such as ``tools``: the card of Pi run with
``--tools`` from ``versions.PROFILES``; ``id`` is then ``pi-<version>+<profile>``), ``package`` (the npm package the
version was installed from, e.g.
``@earendil-works/pi-coding-agent``), ``engines_node`` (its Node.js range), ``cli`` (what ``pi --help`` documents:
``options``, Pi's own ``env`` variables; ``isolation_flags`` and ``run_env`` that unattended runs use;
``json_events``, the event types ``--mode json`` printed). ``session``: the session-file layout Pi wrote (header
``version`` and keys, the keys of each entry type, of each message role and of each content block type).

System prompt: ``system_prompt.parts`` is a list of fixed texts (``{"text": …}``) and variables (``{"var": …}``):
``install_dir`` (the Pi package folder named in the docs block; default: where ``harnessfit harness install``
puts it, ``<HARNESSFIT_HOME>/harness/pi/<version>/node_modules/<package>``), ``date`` (``YYYY-MM-DD``; only in
versions whose prompt has a date), ``cwd`` (absolute) and ``context`` (the project-context section built from context
files with ``system_prompt.context`` = ``header`` + files joined by ``separator`` (each ``file`` template with
``{path}``/``{content}``) + ``footer``; empty when there are none, as with ``-nc``).

Result and error texts (``results`` / ``errors``) are ``str.format`` templates; ``format_result(key, **values)``
fills one. Keys:

- ``read`` ``{content}``; ``read_more_lines`` (a ``limit`` stopped early) ``{content} {remaining} {next_offset}``;
  ``read_truncated_lines`` (2000-line cap) and ``read_truncated_bytes`` (50 KB cap)
  ``{content} {start} {end} {total} {next_offset}``;
- ``bash`` ``{output}``; ``bash_no_output`` (the literal ``(no output)``); ``bash_exit_code`` ``{output} {code}``
  (``output`` is ``(no output)`` when empty); ``bash_timeout`` ``{seconds}`` (no output);
- ``edit`` ``{count} {path}``; ``write`` ``{bytes} {path}``;
- errors: ``file_not_found`` ``{abs_path}`` (ENOENT); ``offset_beyond_end`` ``{offset} {total}``;
  ``tool_not_found`` ``{name}``; ``edit_no_match`` ``{path}``; ``edit_empty`` (edits is ``[]``); ``validation_failed`` ``{name} {problems}
  {arguments}`` where ``problems`` are ``validation_problem`` lines (``{path} {message}``) joined by ``\\n`` and
  ``arguments`` is ``pi_pretty_json(arguments as parsed)``; ``invalid_arguments`` ``{name} {reason} {raw}`` (1.x:
  argument text that is not one JSON object, with the text as sent) and ``arguments_not_object`` (its reason for
  valid JSON that is not an object); ``no_result`` (the literal ``No result provided``, sent
  for a tool call that never got a result).

``refused(text)`` names the error key when a tool-result text is one of Pi's refusals (``REFUSAL_KEYS``: Pi answered
instead of running the tool), matched against these templates. ``result_key(tool, text)`` names the template a
recorded result was made from (the tool's own results — keys named after it — or any error text), so a result can
be compared across versions key by key (``harness.diff.CardDiff.result_identical``).

``examples`` keeps the captured calls (name, raw arguments, whether Pi ran the tool, the result text) that the
error texts were learned from.
"""

from __future__ import annotations

import functools
import json
import re
import string
from collections.abc import Callable, Sequence
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import jsonschema
import orjson
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from harnessfit.core.jsonio import sha256_bytes
from harnessfit.errors import UserError
from harnessfit.harness.base import get_harness
from harnessfit.harness.versions import DEFAULT_PI_VERSION, PI_CARD_VERSIONS, harness_profile, parse_harness
from harnessfit.paths import harness_dir

__all__ = [
    "ViolationCode",
    "Violation",
    "PromptTemplate",
    "HarnessCard",
    "load_card",
    "load_harness",
    "card_from_json",
    "card_path",
    "CARD_FORMAT",
    "pi_pretty_json",
    "WARNING_CODES",
    "REFUSAL_KEYS",
]


CARD_FORMAT = 2
"""Card layout version. 2: ``format``, ``package``, ``engines_node``, ``cli`` and ``session`` added, the ``date``
variable optional (1 was the 0.73.1-only layout without them)."""
READABLE_FORMATS = (CARD_FORMAT,)


class ViolationCode(StrEnum):
    """Closed set of reasons a tool call is not what the harness accepts (errors) or only accepts by repair (warnings)."""

    unknown_tool = "unknown_tool"
    invalid_json = "invalid_json"
    arguments_not_object = "arguments_not_object"
    arguments_double_encoded = "arguments_double_encoded"
    missing_required = "missing_required"
    unexpected_property = "unexpected_property"
    wrong_type = "wrong_type"
    invalid_value = "invalid_value"
    # warnings: Pi repairs these and runs the tool
    legacy_edit_arguments = "legacy_edit_arguments"
    edits_json_string = "edits_json_string"
    repaired_truncated_json = "repaired_truncated_json"
    repaired_json_string = "repaired_json_string"
    coerced_type = "coerced_type"
    ignored_property = "ignored_property"


WARNING_CODES = frozenset(
    {
        ViolationCode.legacy_edit_arguments,
        ViolationCode.edits_json_string,
        ViolationCode.repaired_truncated_json,
        ViolationCode.repaired_json_string,
        ViolationCode.coerced_type,
        ViolationCode.ignored_property,
    }
)


REFUSAL_KEYS: tuple[str, ...] = ("validation_failed", "invalid_arguments", "tool_not_found", "edit_empty")
"""Error texts that mean Pi refused the call (did not run the tool), as opposed to a tool that ran and failed."""


@functools.cache
def _template_pattern(template: str) -> re.Pattern[str]:
    """A ``str.format`` template as a regex matching its head: the fixed text up to the first variable, any text,
    then the fixed text after it. With one variable or none that is the whole template (the match must reach the
    end); with more (a validation error's problem list and arguments), what follows the head may vary."""
    items = list(string.Formatter().parse(template))
    pattern = re.escape(items[0][0])
    if items[0][1] is not None:
        pattern += ".*?" + (re.escape(items[1][0]) if len(items) > 1 else "")
    fields = sum(1 for _, field, _, _ in items if field is not None)
    return re.compile(pattern + (r"\Z" if fields <= 1 else ""), re.DOTALL)


@functools.cache
def _full_pattern(template: str) -> tuple[re.Pattern[str], int]:
    """A ``str.format`` template as a regex matching a whole text it could have made (each variable any text), and
    the length of its fixed text (the more fixed text, the more specific the template)."""
    pattern, fixed = "", 0
    for literal, field_name, _, _ in string.Formatter().parse(template):
        pattern += re.escape(literal)
        fixed += len(literal)
        if field_name is not None:
            pattern += "(?s:.*?)"
    return re.compile(pattern + r"\Z", re.DOTALL), fixed


@functools.cache
def _head_tail(template: str) -> tuple[str, str]:
    """The fixed text before a template's first variable and after its last (the whole text when it has none): a
    text the template made starts with the one and ends with the other."""
    items = list(string.Formatter().parse(template))
    if all(field is None for _, field, _, _ in items):
        whole = "".join(literal for literal, _, _, _ in items)
        return whole, whole
    last = max(i for i, (_, field, _, _) in enumerate(items) if field is not None)
    return items[0][0], "".join(literal for literal, _, _, _ in items[last + 1 :])


_FRAGMENT_KEYS = frozenset({"validation_problem", "arguments_not_object"})
"""Texts that are only ever a piece of another one (a line of ``validation_failed``, the reason of
``invalid_arguments``), never a whole tool result."""


class Violation(BaseModel):
    """One finding about a tool call: a closed ``code``, ``error`` (Pi refuses the call) or ``warning`` (Pi repairs it)."""

    code: ViolationCode
    severity: Literal["error", "warning"]
    detail: str


def violation(code: ViolationCode, detail: str) -> Violation:
    return Violation(code=code, severity="warning" if code in WARNING_CODES else "error", detail=detail)


def pi_pretty_json(value: Any) -> str:
    """``JSON.stringify(value, null, 2)`` as Pi prints received arguments in validation errors."""
    return json.dumps(value, indent=2, ensure_ascii=False)


class ContextTemplate(BaseModel):
    """How context files (AGENTS.md…) become the "# Project Context" section of the system prompt."""

    header: str
    file: str
    separator: str
    footer: str

    def render(self, context_files: Sequence[tuple[str, str]]) -> str:
        if not context_files:
            return ""
        blocks = [_fill_file(self.file, p, c) for p, c in context_files]
        return self.header + self.separator.join(blocks) + self.footer


def _fill_file(template: str, path: str, content: str) -> str:
    # split on the placeholders rather than str.format: context files contain braces freely
    before, rest = template.split("{path}", 1)
    middle, after = rest.split("{content}", 1)
    return before + path + middle + content + after


class PromptTemplate(BaseModel):
    """The system prompt as fixed texts and named variables, in order."""

    parts: list[dict[str, str]]
    context: ContextTemplate
    variables: list[str]

    def render(self, values: dict[str, str]) -> str:
        out = []
        for part in self.parts:
            if "text" in part:
                out.append(part["text"])
            else:
                out.append(values[part["var"]])
        return "".join(out)


class HarnessCard(BaseModel):
    """The contract of one harness version (see the module docstring for the fields and result keys)."""

    model_config = ConfigDict(extra="forbid")

    format: int = CARD_FORMAT
    harness: str
    version: str
    profile: str | None = None
    package: str
    engines_node: str | None = None
    cli: dict[str, Any]
    request: dict[str, Any]
    system_prompt: PromptTemplate
    tools: list[dict[str, Any]]
    default_tools: list[str]
    serialisation: dict[str, Any]
    results: dict[str, str]
    errors: dict[str, str]
    session: dict[str, Any]
    examples: list[dict[str, Any]] = Field(default_factory=list)
    # per-tool schema and compiled validator, built on first use (validate_call runs once per converted call)
    _validators: dict[str, tuple[dict[str, Any], Any, Callable[[Any], bool] | None]] = PrivateAttr(default_factory=dict)
    _result_index: dict[str, list[tuple[str, re.Pattern[str], str, str]]] = PrivateAttr(default_factory=dict)
    # the field values the two caches above were built from: ``model_copy(update=...)`` copies private attributes,
    # so a copy with other tools or templates must not reuse them
    _cached_from: tuple[Any, ...] = PrivateAttr(default=())

    # -- identity --------------------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        return f"{self.harness}-{self.version}" + (f"+{self.profile}" if self.profile else "")

    def to_json_bytes(self, *, indent: bool = True) -> bytes:
        """The card as stored: fields in declaration order, dict key order kept (no ``profile`` key for the default
        tools, so the cards captured before profiles existed keep their bytes)."""
        option = orjson.OPT_INDENT_2 if indent else 0
        data = self.model_dump(mode="json")
        if data.get("profile") is None:
            data.pop("profile", None)
        return orjson.dumps(data, option=option) + (b"\n" if indent else b"")

    @property
    def sha256(self) -> str:
        """SHA-256 of the canonical (compact) card JSON."""
        return sha256_bytes(self.to_json_bytes(indent=False))

    # -- system prompt ---------------------------------------------------------------------------------------
    def default_install_dir(self) -> str:
        """Where ``harnessfit harness install`` puts this harness's package (the default ``install_dir``)."""
        return str(harness_dir(self.harness, self.version) / "node_modules" / self.package)

    def render_system_prompt(
        self,
        cwd: str,
        date: str,
        context_files: Sequence[tuple[str, str]] = (),
        install_dir: str | None = None,
    ) -> str:
        """The exact system prompt for ``cwd`` and ``date`` (``YYYY-MM-DD``), with ``(path, content)`` context files."""
        values = {
            "cwd": cwd,
            "date": date,
            "install_dir": install_dir if install_dir is not None else self.default_install_dir(),
            "context": self.system_prompt.context.render(context_files),
        }
        return self.system_prompt.render(values)

    def _caches(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The validator and result-index caches, emptied first when ``tools``, ``results`` or ``errors`` is no
        longer the object they were built from (a ``model_copy`` with an update)."""
        private = self.__pydantic_private__  # one slot read (the attribute names go through pydantic's __getattr__)
        source = private["_cached_from"]
        if (
            len(source) != 3
            or source[0] is not self.tools
            or source[1] is not self.results
            or source[2] is not self.errors
        ):
            if source:  # built from other fields: start over
                private["_validators"], private["_result_index"] = {}, {}
            private["_cached_from"] = (self.tools, self.results, self.errors)
        return private["_validators"], private["_result_index"]

    # -- tools -----------------------------------------------------------------------------------------------
    @property
    def _schemas(self) -> dict[str, dict[str, Any]]:
        return {t["function"]["name"]: t["function"]["parameters"] for t in self.tools}

    def _validator(self, name: str) -> tuple[dict[str, Any], Any, Callable[[Any], bool] | None] | None:
        """(schema, compiled validator, clean-shape predicate) of tool ``name``, built once; None if the card lacks it."""
        cache = self._caches()[0]
        entry = cache.get(name)
        if entry is None:
            schema = self._schemas.get(name)
            if schema is None:
                return None
            entry = cache[name] = (schema, jsonschema.Draft7Validator(schema), _clean_checker(schema))
        return entry

    def schema(self, name: str) -> dict[str, Any] | None:
        """The parameters schema of tool ``name`` exactly as Pi sends it (None for a tool the card lacks)."""
        return self._schemas.get(name)

    def repair_arguments(
        self, name: str, arguments: dict[str, Any]
    ) -> tuple[dict[str, Any], list[Violation], list[str]]:
        """The harness's own repairs applied to a copy of ``arguments`` (a known tool's object arguments): the
        repaired copy, the repair notes and the coercion notes — what the harness executes, and why (Pi's:
        ``harness.pi.arguments.repair_arguments``). The caller's ``arguments`` are never changed."""
        return self._harness().repair_arguments(self, name, arguments)

    @property
    def strict_arguments(self) -> bool:
        """Whether this version refuses argument text that is not one complete JSON object (``invalid_arguments``,
        1.x) instead of repairing truncated JSON and running the tool (up to 0.82)."""
        return "invalid_arguments" in self.errors

    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]

    def validate_call(
        self, name: str, arguments: str | dict | Any, *, active_tools: Sequence[str] | None = None
    ) -> list[Violation]:
        """Check one tool call the way the harness would (Pi's checks: ``harness.pi.arguments.validate_call``):
        errors mean it answers with an error instead of running the tool, warnings mean it repairs the call and
        runs it. ``[]`` means the call is clean."""
        active = active_tools if active_tools is not None else self.default_tools
        return self._harness().validate_call(self, name, arguments, active)

    def _harness(self) -> Any:
        return get_harness(self.harness)

    def tool_validator(self, name: str) -> tuple[dict[str, Any], Any, Callable[[Any], bool] | None] | None:
        """(schema, compiled JSON Schema validator, clean-shape predicate) of tool ``name``, built once per card; None
        if the card lacks it."""
        return self._validator(name)

    # -- results ---------------------------------------------------------------------------------------------
    def format_result(self, key: str, **values: Any) -> str:
        """Fill one ``results``/``errors`` template, e.g. ``format_result("bash_exit_code", output="..", code=2)``."""
        template = self.results.get(key, self.errors.get(key))
        if template is None:
            known = ", ".join(sorted([*self.results, *self.errors]))
            raise KeyError(f"card {self.id} has no result/error text {key!r} (known: {known})")
        return template.format(**values)

    def refused(self, result_text: str) -> str | None:
        """The error key (one of ``REFUSAL_KEYS``) when ``result_text`` is a text Pi sends *instead of* running the
        tool (validation failed, tool not found, edit input invalid), else ``None``."""
        for key in REFUSAL_KEYS:
            template = self.errors.get(key)
            if template is not None and _template_pattern(template).match(result_text):
                return key
        return None

    def _result_candidates(self, tool: str) -> list[tuple[str, str]]:
        candidates = [(k, t) for k, t in self.results.items() if k == tool or k.startswith(tool + "_")]
        return candidates + [(k, t) for k, t in self.errors.items() if k not in _FRAGMENT_KEYS]

    def result_key_reference(self, tool: str, text: str) -> str | None:
        """The definition of ``result_key``: every candidate template matched against the whole text, the one with
        the most fixed text kept (the first of equals)."""
        best: tuple[int, str] | None = None
        for key, template in self._result_candidates(tool):
            pattern, fixed = _full_pattern(template)
            if (best is None or fixed > best[0]) and pattern.match(text):
                best = (fixed, key)
        return None if best is None else best[1]

    def result_key(self, tool: str, text: str) -> str | None:
        """The ``results``/``errors`` key whose template made ``text``, the result of a call to ``tool``: among the
        tool's own result texts (``read``, ``read_more_lines`` … — keys named after the tool) and every error text,
        the most specific template (most fixed text) that matches the whole of it; ``None`` when none does (a text
        Pi does not template, such as an operating-system error).

        ``result_key_reference`` is the plain definition. This is the same search in a faster order (checked
        against it in ``tests/harness/test_card.py``): the candidates sorted by fixed text, most first (a stable
        sort keeps the first of equals first), so the first that matches is the answer; and before each regex the
        two conditions it implies — the text starts with the template's fixed head and ends with its fixed tail."""
        cache = self._caches()[1]
        index = cache.get(tool)
        if index is None:
            entries = [
                (key, *_full_pattern(template), *_head_tail(template))
                for key, template in self._result_candidates(tool)
            ]
            entries.sort(key=lambda e: -e[2])
            index = cache[tool] = [(k, p, h, t) for k, p, _, h, t in entries]
        for key, pattern, head, tail in index:
            if text.startswith(head) and text.endswith(tail) and pattern.match(text):
                return key
        return None

    def validation_failed_text(self, name: str, problems: Sequence[tuple[str, str]], arguments: Any) -> str:
        """Pi's validation error text for ``(path, message)`` problems and the arguments as parsed."""
        lines = "\n".join(self.format_result("validation_problem", path=p, message=m) for p, m in problems)
        return self.format_result("validation_failed", name=name, problems=lines, arguments=pi_pretty_json(arguments))


_CLEAN_KEYWORDS = frozenset({"type", "required", "properties", "additionalProperties", "items", "description"})
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _clean_checker(schema: Any) -> Callable[[Any], bool] | None:
    """A predicate that is True only for values the full check passes untouched: every value already of its schema
    type (so Pi coerces nothing), required keys present, no key outside ``properties`` (so nothing is ignored or
    unexpected). ``False`` means "not sure": the caller runs the full validator. ``None`` when the schema uses a
    keyword this shortcut does not model (the full validator always runs then)."""
    if not isinstance(schema, dict) or not set(schema) <= _CLEAN_KEYWORDS or not isinstance(schema.get("type"), str):
        return None
    exact = _EXACT_TYPES.get(schema["type"])
    if exact is None:
        return None
    typ = schema["type"]
    if typ == "object":
        props = schema.get("properties", {})
        required = schema.get("required", [])
        if (
            not isinstance(props, dict)
            or not isinstance(required, list)
            or schema.get("additionalProperties", False) not in (True, False)
        ):
            return None
        subs = {k: _clean_checker(v) for k, v in props.items()}
        if any(c is None for c in subs.values()):
            return None

        def check_object(value: Any) -> bool:
            if type(value) is not dict:
                return False
            for key in required:
                if key not in value:
                    return False
            for key, item in value.items():
                sub = subs.get(key)
                if sub is None or not sub(item):
                    return False
            return True

        return check_object
    if typ == "array":
        items = _clean_checker(schema["items"]) if "items" in schema else None
        if items is None:
            return None

        def check_array(value: Any) -> bool:
            return type(value) is list and all(items(v) for v in value)

        return check_array

    def check_scalar(value: Any) -> bool:
        return type(value) in exact  # exact type: bool is not a number, no subclasses

    return check_scalar


def schema_violations(card: HarnessCard, name: str, arguments: dict[str, Any]) -> list[Violation]:
    """What the JSON Schema of tool ``name`` finds wrong with ``arguments``, in path order (no repair, no coercion)."""
    entry = card.tool_validator(name)
    if entry is None:
        return [violation(ViolationCode.unknown_tool, f"tool {name!r} is not in card {card.id}")]
    _, validator, clean = entry
    if clean is not None and clean(arguments):
        return []
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    return [from_schema_error(err) for err in errors]


def from_schema_error(err: jsonschema.ValidationError) -> Violation:
    where = ".".join(str(p) for p in err.absolute_path) or "root"
    if err.validator == "required":
        return violation(ViolationCode.missing_required, f"{where}: {err.message}")
    if err.validator == "additionalProperties":
        return violation(ViolationCode.unexpected_property, f"{where}: {err.message}")
    if err.validator == "type":
        return violation(ViolationCode.wrong_type, f"{where}: {err.message}")
    return violation(ViolationCode.invalid_value, f"{where}: {err.message}")


# -- loading -------------------------------------------------------------------------------------------------


def card_path(name: str = "pi", version: str = DEFAULT_PI_VERSION, profile: str | None = None) -> Path:
    """Where the committed card of ``name``/``version`` (and ``profile``) lives inside the package."""
    stem = f"{name}-{version}" + (f"+{profile}" if profile else "")
    return Path(str(resources.files("harnessfit.harness") / "cards" / f"{stem}.json"))


def card_from_json(data: bytes, source: str = "card") -> HarnessCard:
    """A card from its JSON; a UserError naming the format when this harnessfit cannot read it."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UserError(f"{source} is not JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise UserError(f"{source} is not a harness card (a JSON object)")
    fmt = raw.get("format", 1)
    if fmt not in READABLE_FORMATS:
        known = ", ".join(map(str, READABLE_FORMATS))
        hint = (
            "re-capture it with `harnessfit harness capture`"
            if isinstance(fmt, int) and fmt < CARD_FORMAT
            else ("it was written by a newer harnessfit; upgrade harnessfit")
        )
        raise UserError(f"{source} has card format {fmt!r}, this harnessfit reads format {known}: {hint}")
    return HarnessCard.model_validate(raw)


def load_harness(spec: str | None) -> HarnessCard:
    """The committed card a harness spec names: ``pi@0.82.0`` → card pi-0.82.0, ``pi@0.82.0+tools``
    → its tools profile; ``None`` → the default (the newest committed card)."""
    name, version = parse_harness(spec)
    return load_card(name, version, harness_profile(spec))


def load_card(name: str = "pi", version: str = DEFAULT_PI_VERSION, profile: str | None = None) -> HarnessCard:
    """The committed card for ``name``/``version``, or for one of its profiles (``profile="tools"``)."""
    path = card_path(name, version, profile)
    if not path.is_file():
        if profile:
            raise UserError(
                f"no {profile!r} card for {name} {version}: run `harnessfit harness capture {name} --version "
                f"{version} --profile {profile} --out FILE`"
            )
        raise UserError(
            f"no harness card for {name} {version} (committed: {', '.join(PI_CARD_VERSIONS)}): "
            f"run `harnessfit harness capture {name} --version {version} --out FILE`"
        )
    return card_from_json(path.read_bytes(), path.name)
