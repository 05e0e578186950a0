"""What a redaction rule is: a detector (a regular expression, or a detect-secrets plugin), the checks a match must
pass to be a finding, the literals every match contains, and a few examples of what it finds.

A rule is data: the plain engine (``reference.findings``) reads it as "every match of the pattern, in order, that
passes ``accept``", and the fast engine (``fast.Scanner``) derives its shortcuts from it: which texts can hold a
match (the literals), where a match can start (literals every match starts with), whether a conversation's texts
can be scanned joined (``patterns.newline_neutral``). Each of those facts is proved from the pattern when the rule
is built, so a wrong literal raises here instead of silently hiding secrets.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from harnessfit.dataset.redact.patterns import Literal, is_slice, necessary, newline_neutral, starts_with

__all__ = ["Rule", "PluginRule", "Joined", "Accept", "plausible", "placeholder_like", "nonempty", "SECRET_MIN_LEN"]

SECRET_MIN_LEN = 8

Accept = Callable[[str, str, int], bool]
"""``accept(value, text, start)``: whether a match (its value, the text it is in, where the match starts in it) is a
finding."""

_PLACEHOLDER_WORDS = (
    "${",
    "{{",
    "%(",
    "process.env",
    "os.environ",
    "getenv",
    "xxxx",
    "****",
    "your_",
    "your-",
    "<",
    "example",
    "placeholder",
    "dummy",
    "changeme",
    "redacted",
)


def placeholder_like(value: str) -> bool:
    """A template, reference or placeholder rather than a value: ``${X}``, ``{{ x }}``, ``process.env``, ``xxxx``,
    ``<your-key>``, an existing ``REDACTED_`` placeholder…"""
    low = value.lower()
    return "REDACTED_" in value or any(t in low for t in _PLACEHOLDER_WORDS)


def plausible(value: str, text: str = "", start: int = 0) -> bool:
    """A value that may be a secret: not short, not an identifier or env-var name, not a template, reference or
    existing placeholder."""
    if len(value) < SECRET_MIN_LEN:
        return False
    if re.fullmatch(r"[a-z_.\-]+", value) or re.fullmatch(r"[A-Z_]+", value):
        return False
    return not placeholder_like(value)


def nonempty(value: str, text: str = "", start: int = 0) -> bool:
    """Every non-empty match is a finding (for shapes no template or identifier can take)."""
    return bool(value)


class Joined(Protocol):
    """A conversation's texts joined by newlines, as the fast engine holds them (what ``Rule.starts`` reads)."""

    text: str
    raw: bytes  # ``text`` as UTF-8 (surrogates passed)

    def offsets(self, literal: str, ignore_case: bool = False) -> list[int]:
        """Character offsets of ``literal`` in ``text`` (one of the engine's literals; [] when absent)."""


@dataclass(frozen=True, eq=False)
class Rule:
    """A regex detector. ``pattern``'s group ``v`` (else the whole match, else ``value``) is the value found.

    ``literals``: every match contains one of them (case-insensitively when the pattern is); proved at
    construction, ``ValueError`` otherwise. Written as strings every match *starts* with, they also let the fast
    engine try the pattern only where one occurs. ``()``: no guard. ``accept``: the check a match must pass.
    ``examples``: texts that each hold at least one finding of the rule (checked at construction; the
    differential test builds its texts from them and from the literals). ``starts``: for a rule without usable
    literals, where matches can start in a conversation's joined texts (a superset, ascending; a fast-engine hint
    the differential test pins). ``switch``: the name that turns the rule off (``Redactor(kinds=…)``; default
    ``kind``). ``placeholder``: ``secret`` (``REDACTED_<KIND>_<n>``), ``email`` (``email<n>@redacted.invalid``) or
    ``user`` (a user name in a home-folder path, replaced by ``user<n>`` there).
    """

    kind: str
    pattern: re.Pattern[str]
    literals: tuple[str, ...] = ()
    accept: Accept = plausible
    examples: tuple[str, ...] = ()
    value: str | None = None
    starts: Callable[[Joined], Iterable[int]] | None = None
    switch: str = ""
    placeholder: str = "secret"
    keys: tuple[Literal, ...] = field(init=False)
    anchored: bool = field(init=False)  # every match starts with one of the literals
    joinable: bool = field(init=False)  # matches in joined texts are the per-text ones (see patterns.newline_neutral)
    group: str | int = field(init=False)

    def __post_init__(self) -> None:
        icase = bool(self.pattern.flags & re.IGNORECASE)
        keys = tuple(Literal(icase, lit) for lit in self.literals)
        _check_literals(self.kind, keys)
        if keys and not necessary(self.pattern, keys):
            raise ValueError(
                f"redaction rule {self.kind!r}: a match of {self.pattern.pattern!r} can hold none of the "
                f"literals {self.literals}; every literal set must be a necessary condition"
            )
        group = self.value or ("v" if "v" in self.pattern.groupindex else 0)
        joinable = newline_neutral(self.pattern)
        if self.starts is not None and not joinable:
            raise ValueError(
                f"redaction rule {self.kind!r}: `starts` needs a pattern that treats a newline as a text "
                "edge (no \\A, \\Z, non-multiline ^/$, or lookaround that can read a newline)"
            )
        if self.placeholder not in ("secret", "email", "user"):
            raise ValueError(f"redaction rule {self.kind!r}: placeholder must be secret, email or user")
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "anchored", bool(keys) and starts_with(self.pattern, keys))
        object.__setattr__(self, "joinable", joinable)
        object.__setattr__(self, "group", group)
        object.__setattr__(self, "switch", self.switch or self.kind)
        for example in self.examples:
            if not self.find(example):
                raise ValueError(f"redaction rule {self.kind!r}: example {example!r} holds no finding")

    def finding(self, m: re.Match[str], text: str, start: int) -> str | None:
        """The value of match ``m`` when it is a finding (``start``: where ``m`` starts in ``text``)."""
        v = m.group(self.group)
        return v if v and self.accept(v, text, start) else None

    def find(self, text: str) -> list[str]:
        """The plain definition: the values of every match in ``text``, left to right, that pass ``accept``."""
        return [v for m in self.pattern.finditer(text) if (v := self.finding(m, text, m.start())) is not None]


def _check_literals(kind: str, keys: tuple[Literal, ...]) -> None:
    for key in keys:
        if not key.text or "\n" in key.text or (key.ignore_case and not key.text.isascii()):
            raise ValueError(
                f"redaction rule {kind!r}: literal {key.text!r} must be non-empty, hold no newline and "
                "be ASCII when the rule ignores case"
            )


@dataclass(frozen=True, eq=False)
class PluginRule:
    """A detect-secrets regex plugin (``plugin``: ``module:Class`` under ``detect_secrets.plugins``) as a rule.

    Its findings are what the plugin's ``analyze_string`` yields that ``plausible`` accepts. ``literals`` /
    ``any_case``: every match of every pattern in the plugin's ``denylist`` contains one of them (the second ones
    case-insensitively); ``corpus_guard``: a run of one pattern's own items (so every match contains a match of
    it), searched once over a conversation when the literals occur in nearly every text. Both are proved when
    the plugin is first loaded (``load``; detect-secrets is imported only when a scanner needs it)."""

    kind: str
    plugin: str
    literals: tuple[str, ...] = ()
    any_case: tuple[str, ...] = ()
    corpus_guard: str | None = None
    examples: tuple[str, ...] = ()
    switch: str = "detect_secrets"
    placeholder: str = "secret"
    keys: tuple[Literal, ...] = field(init=False)
    _loaded: list[Any] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        keys = tuple(Literal(False, lit) for lit in self.literals) + tuple(Literal(True, lit) for lit in self.any_case)
        _check_literals(self.kind, keys)
        object.__setattr__(self, "keys", keys)

    def load(self) -> Any:
        """The plugin instance, its literals and corpus guard checked against its patterns (once)."""
        if self._loaded:
            return self._loaded[0]
        module, _, name = self.plugin.partition(":")
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)()
        slug = "ds_" + re.sub(r"[^a-z0-9]+", "_", plugin.secret_type.lower()).strip("_")
        if slug != self.kind:
            raise ValueError(f"redaction rule {self.kind!r}: the plugin's secret type gives kind {slug!r}")
        for pat in plugin.denylist:
            if self.keys and not necessary(pat, self.keys):
                raise ValueError(
                    f"redaction rule {self.kind!r}: a match of {pat.pattern!r} can hold none of the "
                    f"literals {self.literals + self.any_case}"
                )
        if self.corpus_guard is not None:
            guard = re.compile(self.corpus_guard)
            if not any(is_slice(guard, pat) for pat in plugin.denylist):
                raise ValueError(
                    f"redaction rule {self.kind!r}: corpus guard {self.corpus_guard!r} is not a run of "
                    "items of one of the plugin's patterns"
                )
        self._loaded.append(plugin)
        for example in self.examples:
            if not self.find(example):
                raise ValueError(f"redaction rule {self.kind!r}: example {example!r} holds no finding")
        return plugin

    def find(self, text: str) -> list[str]:
        """The plain definition: the plugin's values in ``text`` that ``plausible`` accepts."""
        return [v for v in self.load().analyze_string(text) if isinstance(v, str) and plausible(v)]
