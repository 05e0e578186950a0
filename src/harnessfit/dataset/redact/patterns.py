"""Facts about a regular expression, proved from its parse tree (``re._parser``), that the fast engine relies on.

A rule's guard literals are what lets the fast engine skip a detector on a text: if a literal it declares were not
a true necessary condition of the pattern, a secret would be dropped silently. So nothing here is sampled or
guessed; each fact is derived by a sound construction over the parsed pattern, and any construct it cannot
reason about makes it answer "not proved" (the rule is then refused, or the engine takes its plain path).

The construction (the classic prefilter analysis, as in RE2's and trigram indexes'): every node gets

- ``exact``: the finite set of strings it can match, when that set is small (``None`` otherwise);
- ``prefix`` / ``suffix``: sets of strings every match starts / ends with (``{""}``: nothing known);
- ``covered``: whether every match contains one of the literals.

A sequence is covered when one of its items is, or when a run of adjacent exact items (with the next item's
prefix and the previous one's suffix joined on) consists of strings that each contain a literal. An alternation
is covered when every branch is; a repeat when it must run at least once and its body is covered. Zero-width
assertions match the empty string. Case: in a case-insensitive pattern every string is built from ASCII
lower-cased letters (a non-ASCII letter, or a class the analysis cannot enumerate, is "unknown"), and a literal
is then a necessary condition of the lower-cased text *or* of the text holding one of the non-ASCII letters
``(?i)`` matches to that literal's letters (``FOLD_CHARS``; the engine treats such a text as holding the literal).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple

try:  # Python 3.11+
    import re._constants as C  # type: ignore[import-not-found]
    import re._parser as P  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as C
    import sre_parse as P

__all__ = ["Literal", "FOLD_CHARS", "folds_of", "necessary", "starts_with", "newline_neutral", "is_slice"]

# the only non-ASCII characters that (?i) matches to an ASCII letter (İ ı ſ and the Kelvin sign; a test scans every
# code point): a case-insensitive literal may hide behind one of them in the lower-cased text
FOLD_CHARS = "\u0130\u0131\u017f\u212a"
_CAP = 512  # largest finite set of strings the analysis keeps for one node
_CLASS_CAP = 64  # largest character class it enumerates


class Literal(NamedTuple):
    """A guard literal: ``text`` occurs in every match (``ignore_case``: in the match's ASCII-lower-cased form)."""

    ignore_case: bool
    text: str


def folds_of(lit: Literal) -> str:
    """The non-ASCII characters that ``(?i)`` matches to one of ``lit``'s letters (none for a case-sensitive one)."""
    if not lit.ignore_case:
        return ""
    return "".join(f for f in FOLD_CHARS if any(re.fullmatch("(?i)" + re.escape(ch), f) for ch in set(lit.text)))


@dataclass(frozen=True)
class _Info:
    exact: frozenset[str] | None
    prefix: frozenset[str]
    suffix: frozenset[str]
    covered: bool


_NOTHING = frozenset({""})
_UNKNOWN = _Info(None, _NOTHING, _NOTHING, False)  # one character (or a group reference) the analysis cannot name


def _cat(a: frozenset[str], b: frozenset[str]) -> frozenset[str] | None:
    if len(a) * len(b) > _CAP:
        return None
    return frozenset(x + y for x in a for y in b)


class _Ctx:
    """The pattern-wide facts a node's info depends on: its case mode and the literals to cover."""

    def __init__(self, icase: bool, literals: tuple[Literal, ...]) -> None:
        self.icase = icase
        self.literals = literals

    def covers(self, strings: frozenset[str] | None) -> bool:
        if not strings:
            return False
        return all(any(self._holds(s, lit) for lit in self.literals) for s in strings)

    def _holds(self, s: str, lit: Literal) -> bool:
        if self.icase:  # the strings are lower-cased already; only a case-insensitive literal is guaranteed
            return lit.ignore_case and lit.text.lower() in s
        if lit.ignore_case:
            return lit.text.lower() in _ascii_lower(s)
        return lit.text in s


def _ascii_lower(s: str) -> str:
    return "".join(ch.lower() if ch.isascii() else ch for ch in s)


def _char(code: int, ctx: _Ctx, icase: bool) -> str | None:
    ch = chr(code)
    if icase != ctx.icase:  # a scoped flag changes the case mode here: not reasoned about
        return None if ch.lower() != ch.upper() else ch
    if icase:
        return ch.lower() if ch.isascii() else (None if ch.lower() != ch.upper() else ch)
    return ch


def _class(items: list[tuple[Any, Any]], ctx: _Ctx, icase: bool) -> _Info:
    chars: set[str] = set()
    for op, av in items:
        if op is C.LITERAL:
            codes = [av]
        elif op is C.RANGE and av[1] - av[0] < _CLASS_CAP:
            codes = list(range(av[0], av[1] + 1))
        else:  # NEGATE, CATEGORY, a wide range
            return _UNKNOWN
        for code in codes:
            ch = _char(code, ctx, icase)
            if ch is None:
                return _UNKNOWN
            chars.add(ch)
    if not chars or len(chars) > _CLASS_CAP:
        return _UNKNOWN
    exact = frozenset(chars)
    return _Info(exact, exact, exact, ctx.covers(exact))


def _node(op: Any, av: Any, ctx: _Ctx, icase: bool) -> _Info:
    if op is C.LITERAL:
        ch = _char(av, ctx, icase)
        if ch is None:
            return _UNKNOWN
        exact = frozenset({ch})
        return _Info(exact, exact, exact, ctx.covers(exact))
    if op is C.IN:
        return _class(av, ctx, icase)
    if op in (C.AT, C.ASSERT, C.ASSERT_NOT):  # zero width: nothing of the match
        return _Info(_NOTHING, _NOTHING, _NOTHING, False)
    if op is C.SUBPATTERN:
        _, add, remove, sub = av
        here = (icase or bool(add & re.IGNORECASE)) and not remove & re.IGNORECASE
        return _seq(sub, ctx, here)
    if op is C.ATOMIC_GROUP:
        return _seq(av, ctx, icase)
    if op is C.BRANCH:
        infos = [_seq(alt, ctx, icase) for alt in av[1]]
        exact: frozenset[str] | None = frozenset()
        for i in infos:
            exact = None if exact is None or i.exact is None or len(exact) + len(i.exact) > _CAP else exact | i.exact
        if exact is not None:
            return _Info(exact, exact, exact, ctx.covers(exact))
        return _Info(
            None,
            frozenset().union(*(i.prefix for i in infos)),
            frozenset().union(*(i.suffix for i in infos)),
            all(i.covered for i in infos),
        )
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT)):
        lo, hi, sub = av
        body = _seq(sub, ctx, icase)
        if hi == 0:
            return _Info(_NOTHING, _NOTHING, _NOTHING, False)
        if body.exact is not None and hi <= 8 and sum(len(body.exact) ** n for n in range(lo, hi + 1)) <= _CAP:
            power, exact = _NOTHING, frozenset()
            for n in range(hi + 1):  # the union of body**n for lo <= n <= hi
                if n >= lo:
                    exact |= power
                power = _cat(power, body.exact)  # type: ignore[assignment]
            return _Info(exact, exact, exact, ctx.covers(exact))
        if lo == 0:
            return _Info(None, _NOTHING, _NOTHING, False)
        return _Info(None, body.exact or body.prefix, body.exact or body.suffix, body.covered)
    return _UNKNOWN  # ANY, NOT_LITERAL, CATEGORY, GROUPREF, GROUPREF_EXISTS


def _seq(sub: Any, ctx: _Ctx, icase: bool) -> _Info:
    exact: frozenset[str] | None = _NOTHING  # the whole sequence so far, while finite
    prefix = _NOTHING
    run = _NOTHING  # the exact tail since the last inexact item: every match so far ends with one of these
    covered = False
    for op, av in sub:
        i = _node(op, av, ctx, icase)
        covered = covered or i.covered
        if i.exact is not None:
            longer = _cat(run, i.exact)
            if longer is None:
                covered = covered or ctx.covers(run)
                longer = i.exact
            run = longer
            if exact is not None:
                whole = _cat(exact, i.exact)
                if whole is None:
                    prefix = exact
                exact = whole
            continue
        closing = _cat(run, i.prefix)
        covered = covered or ctx.covers(closing if closing is not None else run)
        if exact is not None:
            prefix = _cat(exact, i.prefix) or exact
            exact = None
        run = i.suffix
    covered = covered or ctx.covers(run)
    if exact is not None:
        return _Info(exact, exact, exact, covered)
    return _Info(None, prefix, run, covered)


def _parse(pattern: re.Pattern[str]) -> tuple[Any, bool]:
    parsed = P.parse(pattern.pattern, pattern.flags)
    return parsed, bool(parsed.state.flags & re.IGNORECASE)


def necessary(pattern: re.Pattern[str], literals: tuple[Literal, ...]) -> bool:
    """Whether every match of ``pattern`` contains one of ``literals`` (proved, see the module docstring)."""
    parsed, icase = _parse(pattern)
    return bool(literals) and _seq(parsed, _Ctx(icase, literals), icase).covered


def starts_with(pattern: re.Pattern[str], literals: tuple[Literal, ...]) -> bool:
    """Whether every match of ``pattern`` starts with one of ``literals`` (so an anchored attempt at each of their
    occurrences finds every match)."""
    parsed, icase = _parse(pattern)
    info = _seq(parsed, _Ctx(icase, literals), icase)
    starts = info.exact if info.exact is not None else info.prefix

    def opens(s: str, lit: Literal) -> bool:
        if icase:
            return lit.ignore_case and s.startswith(lit.text.lower())
        return _ascii_lower(s).startswith(lit.text.lower()) if lit.ignore_case else s.startswith(lit.text)

    return bool(literals) and all(any(opens(s, lit) for lit in literals) for s in starts)


_MAY_BE_NEWLINE = {C.CATEGORY_SPACE, C.CATEGORY_NOT_DIGIT, C.CATEGORY_NOT_WORD, C.CATEGORY_LINEBREAK}


def _may_match_newline(op: Any, av: Any, flags: int) -> bool:
    if op is C.GROUPREF:
        return True
    if op is C.CATEGORY:
        return av in _MAY_BE_NEWLINE
    if op is C.LITERAL:
        return av == 10
    if op is C.NOT_LITERAL:
        return av != 10
    if op is C.ANY:
        return bool(flags & re.DOTALL)
    if op is C.IN:
        hit = any(
            (o is C.LITERAL and a == 10)
            or (o is C.RANGE and a[0] <= 10 <= a[1])
            or (o is C.CATEGORY and a in _MAY_BE_NEWLINE)
            for o, a in av
        )
        return hit != any(o is C.NEGATE for o, _ in av)
    return False


def _neutral(sub: Any, flags: int, inside: bool) -> bool:
    for op, av in sub:
        if op is C.AT:
            if av in (C.AT_BEGINNING_STRING, C.AT_END_STRING):
                return False
            if av in (C.AT_BEGINNING, C.AT_END) and not flags & re.MULTILINE:
                return False
        elif op in (C.ASSERT, C.ASSERT_NOT):
            if not _neutral(av[1], flags, True):
                return False
        elif op is C.SUBPATTERN:
            if not _neutral(av[3], (flags | av[1]) & ~av[2], inside):
                return False
        elif op is C.ATOMIC_GROUP:
            if not _neutral(av, flags, inside):
                return False
        elif op is C.BRANCH:
            if not all(_neutral(alt, flags, inside) for alt in av[1]):
                return False
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT)):
            if not _neutral(av[2], flags, inside):
                return False
        elif op is C.GROUPREF_EXISTS or (inside and _may_match_newline(op, av, flags)):
            return False
    return True


def newline_neutral(pattern: re.Pattern[str]) -> bool:
    """Whether ``pattern`` treats a newline next to a match like the edge of the string: no ``\\A``/``\\Z``, no
    ``^``/``$`` outside multi-line mode, and no lookaround that can read a newline (``\\b`` is fine: a newline is
    not a word character). Then its matches in texts joined by newlines are exactly the matches in each text,
    except matches that cross a joining newline, which the engine detects (it then scans text by text)."""
    parsed = P.parse(pattern.pattern, pattern.flags)
    return _neutral(parsed, parsed.state.flags, False)


def _shape(node: Any) -> Any:
    """A parse (sub)tree as nested tuples, comparable with ``==``."""
    if isinstance(node, P.SubPattern):
        return tuple(_shape(x) for x in node)
    if isinstance(node, (list, tuple)):
        return tuple(_shape(x) for x in node)
    return node


def is_slice(guard: re.Pattern[str], pattern: re.Pattern[str]) -> bool:
    """Whether ``guard`` is a run of consecutive top-level items of ``pattern`` with the same flags and no
    assertion or group reference: then every match of ``pattern`` contains a match of ``guard`` (at the same
    place), so a text where ``guard`` finds nothing holds no match of ``pattern``."""
    g, p = P.parse(guard.pattern, guard.flags), P.parse(pattern.pattern, pattern.flags)
    if g.state.flags != p.state.flags:
        return False
    gs, ps = _shape(g), _shape(p)
    if any(op in (C.AT, C.ASSERT, C.ASSERT_NOT, C.GROUPREF, C.GROUPREF_EXISTS) for op, _ in gs) or not gs:
        return False
    return any(ps[i : i + len(gs)] == gs for i in range(len(ps) - len(gs) + 1))
