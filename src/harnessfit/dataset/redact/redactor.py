"""Redaction of one conversation: secrets, e-mail addresses and home-folder user names replaced by stable
placeholders.

Why per conversation: a trajectory reads a file and later edits it with ``oldText`` copied from what it read. If a
secret in that file were replaced by a different placeholder in each place, the edit would no longer match. So a
conversation is scanned as a whole first (every text, every tool-call argument value, every tool result), each
distinct secret gets one placeholder (``REDACTED_<KIND>_<n>``, numbered by first appearance), and then the same
value → placeholder map is applied everywhere in that conversation (``substitute``).

Placeholders are shell-safe identifiers (no ``<``/``>``), so a redacted ``bash`` command still parses.

``keep`` strings are never rewritten nor scanned: the build passes the harness install folder, which the system
prompt names and which must stay byte-equal to what Pi sends (a ``/home/alice/...`` install folder would otherwise
become ``/home/user1/...`` in the prompt). A user name elsewhere (cwd, tool calls, results) is still redacted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence

from harnessfit.core.conversation import Conversation
from harnessfit.dataset.redact.fast import ScanHit, Scanner
from harnessfit.dataset.redact.rule import PluginRule, Rule
from harnessfit.dataset.redact.rules import RULES
from harnessfit.dataset.redact.substitute import (
    Placeholders,
    assign_placeholders,
    iter_texts,
    make_substituter,
    plain_needles,
    redact_message,
)

__all__ = ["Redactor", "RedactionResult"]


class RedactionResult:
    """One redacted conversation and what was found in it (``found``: distinct values per kind,
    ``replaced``: occurrences replaced per kind)."""

    __slots__ = ("conversation", "found", "replaced")

    def __init__(self, conversation: Conversation, found: Counter[str], replaced: Counter[str]) -> None:
        self.conversation = conversation
        self.found = found
        self.replaced = replaced


class Redactor:
    """Finds secrets, e-mails and home-folder user names in a conversation and replaces them consistently.

    ``kinds`` limits what is redacted (``None`` = everything): the rules' switches (``KINDS``: each rule's kind,
    ``detect_secrets`` for the plugins). ``rules``: the rule list (default ``RULES``).
    """

    KINDS = sorted({rule.switch for rule in RULES})

    def __init__(
        self,
        kinds: list[str] | None = None,
        *,
        high_entropy: bool = True,
        detect_secrets: bool = True,
        keep: list[str] | None = None,
        rules: Sequence[Rule | PluginRule] | None = None,
    ) -> None:
        self.kinds = set(kinds) if kinds else None
        off = {name for name, on in (("high_entropy", high_entropy), ("detect_secrets", detect_secrets)) if not on}
        chosen = [
            r
            for r in (RULES if rules is None else rules)
            if (self.kinds is None or r.switch in self.kinds) and r.switch not in off
        ]
        self._scanner = Scanner(chosen)
        self._styles = {r.kind: r.placeholder for r in chosen}
        self._user_kinds = {r.kind for r in chosen if r.placeholder == "user"}
        self._kept = sorted({k for k in keep or () if k}, key=lambda k: (-len(k), k))
        self._keep = re.compile("(" + "|".join(re.escape(k) for k in self._kept) + ")") if self._kept else None

    def findings(self, text: str) -> list[ScanHit]:
        """Everything one text holds, as (kind, value): in rule order, then position."""
        return self._scanner.findings(text)

    def find(self, text: str) -> Iterator[ScanHit]:
        """(kind, value) pairs found in one text, in order of rules then position (no user names)."""
        return iter([pair for pair in self.findings(text) if pair[0] not in self._user_kinds])

    def find_users(self, text: str) -> Iterator[str]:
        """User names in home-folder paths of one text (``/home/<name>``, ``/Users/<name>``, ``C:\\Users\\<name>``)."""
        return iter([value for kind, value in self.findings(text) if kind in self._user_kinds])

    @property
    def kept(self) -> list[str]:
        """The strings never rewritten nor scanned (``keep``), longest first."""
        return list(self._kept)

    def placeholders(self, texts: Iterable[str]) -> Placeholders:
        """One placeholder per distinct value the ``texts`` hold (one record's texts: numbered in order of first
        appearance); a kept string is not looked at."""
        # a repeated text (a file read twice, the same command output) can only find values already mapped: scan each
        # distinct text once, in order of first appearance
        texts = [t for t in dict.fromkeys(texts) if t]
        if self._keep is not None:  # the texts that hold a kept string are looked at only around it
            holders = {i for i, text in enumerate(texts) for k in self._kept if k in text}
            if holders:
                texts = list(
                    dict.fromkeys(
                        piece
                        for i, text in enumerate(texts)
                        for piece in (self._keep.split(text)[0::2] if i in holders else (text,))
                        if piece
                    )
                )
        return assign_placeholders((pair for pairs in self._scanner.scan_cached(texts) for pair in pairs), self._styles)

    def substituter(
        self, ph: Placeholders, replaced: Counter[str], escape: Callable[[str], str] | None = None
    ) -> Callable[[str | None], str | None]:
        """``sub(text)`` replacing what ``ph`` maps (counted in ``replaced``), kept strings left alone. ``escape``:
        the form values and kept strings take in the texts ``sub`` will see (JSON text: their JSON escapes)."""
        if escape is None:
            return make_substituter(ph, replaced, self._keep, self._kept)
        esc = Placeholders(
            {escape(v): p for v, p in ph.secrets.items()},
            {escape(n): u for n, u in ph.users.items()},
            ph.kinds,
            ph.found,
        )
        kept = [escape(k) for k in self._kept]
        keep = re.compile("(" + "|".join(re.escape(k) for k in kept) + ")") if kept else None
        return make_substituter(esc, replaced, keep, kept)

    def redact(self, conv: Conversation) -> RedactionResult:
        """Return a redacted copy (or the same object when nothing was found) plus counts per kind."""
        ph = self.placeholders(iter_texts(conv))
        replaced: Counter[str] = Counter()
        if not ph:
            return RedactionResult(conv, ph.found, replaced)
        sub = self.substituter(ph, replaced)
        data = conv.model_dump()
        needles, plain = plain_needles(ph)
        data["messages"] = [redact_message(m, sub, needles, plain) for m in data["messages"]]
        data["meta"]["cwd"] = sub(data["meta"]["cwd"])
        data["meta"]["file"] = sub(data["meta"]["file"])
        return RedactionResult(Conversation.model_validate(data), ph.found, replaced)
