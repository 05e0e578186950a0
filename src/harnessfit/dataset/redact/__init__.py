"""Redaction: secrets, e-mail addresses and home-folder user names replaced by stable placeholders.

- ``rules/`` — the rules as data (``Rule``: a pattern, its literals, a check, examples; ``PluginRule``: a
  detect-secrets plugin), one file per family, ``RULES`` in finding order;
- ``reference.findings(rules, text)`` — the plain engine: what a text holds, the definition;
- ``fast.Scanner(rules)`` — the engine the build uses: the same findings, with prefilters derived from the rules
  and proved when a rule is built (``patterns``);
- ``substitute`` — findings → placeholders (each with its kind) → a rewritten conversation;
- ``Redactor`` — one conversation in, its redacted copy and counts out;
- ``Scrubber`` — the same redaction for every other file the build writes (ledger, manifest, card, …), applied
  by the dataset sink to each write.
"""

from __future__ import annotations

from harnessfit.dataset.redact.fast import ScanHit, Scanner
from harnessfit.dataset.redact.redactor import RedactionResult, Redactor
from harnessfit.dataset.redact.reference import findings as reference_findings
from harnessfit.dataset.redact.rule import PluginRule, Rule, nonempty, plausible
from harnessfit.dataset.redact.rules import RULES
from harnessfit.dataset.redact.scrub import Scrubber
from harnessfit.dataset.redact.substitute import iter_texts, redact_text_values

__all__ = [
    "Redactor",
    "RedactionResult",
    "Scrubber",
    "RULES",
    "Rule",
    "PluginRule",
    "Scanner",
    "ScanHit",
    "reference_findings",
    "plausible",
    "nonempty",
    "iter_texts",
    "redact_text_values",
]
