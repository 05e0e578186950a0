"""The fast engine: for each of a conversation's texts exactly what ``reference.findings`` gives, with the work
decided once per conversation instead of once per text and rule.

Everything it skips, it skips on a fact the rules carry and ``patterns`` proved:

- **literals** — every match of a rule contains one of its literals, so a rule runs only on texts that hold one.
  All literals of all rules are found in one pass per case over the conversation's UTF-8 (Aho-Corasick DFAs;
  case-insensitive ones over the ASCII-lower-cased bytes; a text holding a non-ASCII letter ``(?i)`` folds onto
  one of a literal's letters counts as holding that literal). Single-character literals are tested with ``in``.
- **anchors** — a rule whose literals start every match (``Rule.anchored``), or that names its match starts
  (``Rule.starts``), is tried only there, once over the texts joined by newlines: a match is mapped back to its
  text by offset; the pattern treats the joining newline as a text edge (``Rule.joinable``), and a match that
  crosses one makes the rule run text by text instead.
- **corpus guards** — a detect-secrets plugin whose literal is in nearly every text runs only when a run of its own
  pattern matches somewhere in the conversation (Telegram's and Discord's in one compiled pass).
- **memory** — the findings of long texts are remembered across conversations (a system prompt, a file read in
  many sessions); bounded, oldest first out; what a text holds depends on the text alone.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import ahocorasick_rs
import numpy as np

from harnessfit.dataset.redact.patterns import FOLD_CHARS, Literal, folds_of
from harnessfit.dataset.redact.rule import PluginRule, Rule

__all__ = ["Scanner", "ScanHit"]

ScanHit = tuple[str, str]  # (kind, value): one secret or personal datum the scanner found in a text

# corpus guards with a compiled check: index into kernels.dot_colon_guards' answer (a test pins each against its
# pattern); any other guard is searched with ``re``
_COMPILED_GUARDS = {r":[0-9A-Za-z_-]{35}": 0, r"\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}": 1}
_FOLDS = re.compile(f"[{FOLD_CHARS}]")
# texts at least this long have their findings remembered across conversations, up to these bounds
_CACHE_MIN_CHARS = 256
_CACHE_MAX_TEXTS = 8192
_CACHE_MAX_CHARS = 32 * 2**20


class Scanner:
    """Scans texts with ``rules`` (in their order); ``scan`` equals ``[reference.findings(rules, t) for t in texts]``."""

    def __init__(self, rules: Sequence[Rule | PluginRule]) -> None:
        self.rules = list(rules)
        for rule in self.rules:
            if isinstance(rule, PluginRule):
                rule.load()
        keys = {key for rule in self.rules for key in rule.keys}
        self.literals = sorted(keys, key=lambda k: (len(k.text), k))
        self._guarding: dict[Literal, list[int]] = {}  # literal -> the rules it lets run
        self._unguarded = {i for i, rule in enumerate(self.rules) if not rule.keys}
        for i, rule in enumerate(self.rules):
            for key in rule.keys:
                self._guarding.setdefault(key, []).append(i)
        self._anchored = {
            i
            for i, rule in enumerate(self.rules)
            if isinstance(rule, Rule)
            and rule.starts is None
            and rule.anchored
            and rule.joinable
            and all(len(k.text) > 1 for k in rule.keys)
        }
        self._folds = {key: f for key in self.literals if (f := folds_of(key))}
        self._automata = []
        for insensitive in (False, True):
            lits = [k.text for k in self.literals if k.ignore_case is insensitive and len(k.text) > 1]
            self._automata.append(
                (
                    insensitive,
                    lits,
                    ahocorasick_rs.BytesAhoCorasick(
                        [(lit.lower() if insensitive else lit).encode() for lit in lits],
                        implementation=ahocorasick_rs.Implementation.DFA,
                    )
                    if lits
                    else None,
                )
            )
        self._single = [k for k in self.literals if len(k.text) == 1]
        self._guards = {
            i: (re.compile(rule.corpus_guard), _COMPILED_GUARDS.get(rule.corpus_guard))
            for i, rule in enumerate(self.rules)
            if isinstance(rule, PluginRule) and rule.corpus_guard
        }
        self._seen: OrderedDict[str, list[ScanHit]] = OrderedDict()
        self._seen_chars = 0

    def findings(self, text: str) -> list[ScanHit]:
        """Everything one text holds, as (kind, value), in rule order then position."""
        return self.scan([text])[0] if text else []

    def scan(self, texts: list[str]) -> list[list[ScanHit]]:
        """For each of ``texts``, everything it holds (see ``findings``)."""
        p = _Pass(self, texts)
        out: list[list[ScanHit]] = [[] for _ in texts]
        present: dict[int, list[Literal]] = {}  # rule -> its literals that occur
        for key in p.occ:
            for i in self._guarding.get(key, ()):
                present.setdefault(i, []).append(key)
        for i in sorted(present.keys() | self._unguarded):
            rule, keys = self.rules[i], present.get(i)
            if isinstance(rule, PluginRule):
                if i in self._guards and not p.guard_holds(*self._guards[i]):
                    continue
                for t in p.guarded(keys):
                    out[t] += [(rule.kind, v) for v in rule.find(texts[t])]
                continue
            if rule.starts is not None:
                anchors: Iterable[int] = rule.starts(p)
            elif i in self._anchored and not p.folded.intersection(rule.keys):
                anchors = sorted({at for key in keys or () for at in p.occ[key]})  # type: ignore[union-attr]
            else:
                for t in p.guarded(keys):
                    out[t] += [(rule.kind, v) for v in rule.find(texts[t])]
                continue
            for t, start, m in p.hits(rule, anchors, keys):
                if (v := rule.finding(m, texts[t], start)) is not None:
                    out[t].append((rule.kind, v))
        return out

    def scan_cached(self, texts: list[str]) -> list[list[ScanHit]]:
        """``scan``, with the findings of long texts remembered across calls. The memory is bounded (oldest first
        out) and changes speed only, never a result."""
        out: list[list[ScanHit] | None] = [self._seen.get(t) if len(t) >= _CACHE_MIN_CHARS else None for t in texts]
        todo = [i for i, r in enumerate(out) if r is None]
        if todo:
            for i, found in zip(todo, self.scan([texts[i] for i in todo]), strict=True):
                out[i] = found
                text = texts[i]
                if len(text) >= _CACHE_MIN_CHARS:
                    self._seen[text] = found
                    self._seen_chars += len(text)
                    while len(self._seen) > _CACHE_MAX_TEXTS or self._seen_chars > _CACHE_MAX_CHARS:
                        oldest, _ = self._seen.popitem(last=False)  # O(1); next(iter(dict)) rescans freed slots
                        self._seen_chars -= len(oldest)
        return out  # type: ignore[return-value]

    def occurrences(
        self, corpus: str, raw: bytes | None = None
    ) -> tuple[dict[Literal, list[int] | None], set[Literal]]:
        """Where each literal may occur in ``corpus`` (character offsets, for the literals that occur; ``None`` =
        somewhere, for single characters), and the literals a folding letter may stand in (their offsets include
        those letters' offsets, so they are no anchors). ``raw``: ``corpus`` as UTF-8, when the caller has it."""
        out: dict[Literal, list[int] | None] = {}
        if raw is None:
            raw = corpus.encode("utf-8", "surrogatepass")
        low = raw.lower()  # ASCII letters only: the non-ASCII ones (?i) maps to ASCII are the folding letters
        for insensitive, lits, automaton in self._automata:
            if automaton is not None:
                for n, start, _ in automaton.find_matches_as_indexes(low if insensitive else raw, overlapping=True):
                    out.setdefault(Literal(insensitive, lits[n]), []).append(start)
        folded: set[Literal] = set()
        if len(raw) != len(corpus):
            if out:
                _to_char_offsets(out, raw)  # type: ignore[arg-type]
            if self._folds and any(f in corpus for f in FOLD_CHARS):
                at: dict[str, list[int]] = {}
                for m in _FOLDS.finditer(corpus):
                    at.setdefault(m.group(), []).append(m.start())
                for key, letters in self._folds.items():
                    offs = [k for f in letters for k in at.get(f, ())]
                    if offs:
                        folded.add(key)
                        if len(key.text) > 1:
                            out[key] = sorted((out.get(key) or []) + offs)
        for key in self._single:
            if key.text.encode() in (low if key.ignore_case else raw) or key in folded:
                out[key] = None
        return out, folded


def _to_char_offsets(out: dict[Literal, list[int]], raw: bytes) -> None:
    """Byte offsets -> character offsets, in place, in one compiled pass over ``raw``."""
    # heavy: numba, loaded by the first compiled pass (commands that build no dataset never load it)
    from harnessfit.dataset.redact import kernels

    flat = np.fromiter((at for offs in out.values() for at in offs), dtype=np.int64)
    order = np.argsort(flat, kind="stable")
    chars = np.empty_like(flat)
    chars[order] = kernels.char_offsets(np.frombuffer(raw, dtype=np.uint8), flat[order])
    at = 0
    for key, offs in out.items():
        out[key] = chars[at : at + len(offs)].tolist()
        at += len(offs)


class _Pass:
    """One scan of a conversation's texts: them joined by newlines (``text``, ``raw``), the literals' offsets, and
    which texts hold which literal (a literal holds no newline, so each occurrence lies inside one text)."""

    def __init__(self, scanner: Scanner, texts: list[str]) -> None:
        self.texts = texts
        self.text = "\n".join(texts)
        self.raw = self.text.encode("utf-8", "surrogatepass")
        self.occ, self.folded = scanner.occurrences(self.text, self.raw)
        self._folds = scanner._folds
        self.starts: list[int] = []
        at = 0
        for t in texts:
            self.starts.append(at)
            at += len(t) + 1
        self._holders: dict[Literal, set[int]] = {}
        self._compiled: tuple[bool, bool] | None = None

    def offsets(self, literal: str, ignore_case: bool = False) -> list[int]:
        return self.occ.get(Literal(ignore_case, literal)) or []

    def holding(self, key: Literal) -> set[int]:
        got = self._holders.get(key)
        if got is None:
            offsets = self.occ.get(key, [])
            if offsets is None:  # a single character: which texts hold it
                folds = self._folds.get(key, "")
                got = {
                    i
                    for i, t in enumerate(self.texts)
                    if key.text in (t.lower() if key.ignore_case else t) or any(f in t for f in folds)
                }
            else:
                got = {bisect_right(self.starts, at) - 1 for at in offsets}
            self._holders[key] = got
        return got

    def guarded(self, keys: list[Literal] | None) -> list[int]:
        """The texts that hold one of ``keys``, in order; all of them when ``keys`` is None (no guard)."""
        if keys is None:
            return list(range(len(self.texts)))
        return sorted(set().union(*(self.holding(key) for key in keys)))

    def hits(
        self, rule: Rule, anchors: Iterable[int], keys: list[Literal] | None
    ) -> list[tuple[int, int, re.Match[str]]]:
        """(text index, start within it, match) of every match of ``rule`` when every match starts at one of
        ``anchors`` (ascending): one anchored attempt per anchor, skipping anchors inside the previous match as
        ``finditer`` does; text by text when a match crosses a joining newline."""
        pat, corpus, found, end = rule.pattern, self.text, [], 0
        for a in anchors:
            if a < end or (m := pat.match(corpus, a)) is None:
                continue
            end = m.end()
            i = bisect_right(self.starts, a) - 1
            if end > self.starts[i] + len(self.texts[i]):  # crossed the joining newline: scan text by text
                return [(k, m.start(), m) for k in self.guarded(keys) for m in pat.finditer(self.texts[k])]
            found.append((i, a - self.starts[i], m))
        return found

    def guard_holds(self, guard: re.Pattern[str], compiled: int | None) -> bool:
        if compiled is None:
            return guard.search(self.text) is not None
        if self._compiled is None:
            # heavy: numba, loaded by the first compiled pass (commands that build no dataset never load it)
            from harnessfit.dataset.redact import kernels

            self._compiled = kernels.dot_colon_guards(np.frombuffer(self.raw, dtype=np.uint8))
        return self._compiled[compiled]
