"""The redaction rules, in the order their findings are listed (and placeholders numbered): token shapes,
keyword assignments, command-line and credentials-file secrets, detect-secrets plugins, e-mail addresses, tokens in
base64, high-entropy strings, home-folder user names.

Adding a rule is one entry in one of these lists (see ``docs/extending.md``)."""

from __future__ import annotations

from harnessfit.dataset.redact.rule import PluginRule, Rule
from harnessfit.dataset.redact.rules.assignments import ASSIGNMENTS
from harnessfit.dataset.redact.rules.commands import COMMANDS
from harnessfit.dataset.redact.rules.detect_secrets import DETECT_SECRETS
from harnessfit.dataset.redact.rules.email import EMAIL
from harnessfit.dataset.redact.rules.encoded import ENCODED
from harnessfit.dataset.redact.rules.entropy import ENTROPY
from harnessfit.dataset.redact.rules.home import HOME
from harnessfit.dataset.redact.rules.tokens import TOKENS

__all__ = ["RULES"]

RULES: list[Rule | PluginRule] = [*TOKENS, *ASSIGNMENTS, *COMMANDS, *DETECT_SECRETS, *EMAIL, *ENCODED, *ENTROPY, *HOME]
