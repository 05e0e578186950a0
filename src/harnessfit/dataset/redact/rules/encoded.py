"""A known token hidden in base64 (``echo -n TOKEN | base64``, a Kubernetes secret's ``data:`` value, a config
that stores it encoded). Base64 of a text that starts with a token's prefix starts with fixed characters (``ghp_``
→ ``Z2hw``), which are the rule's literals; a candidate is decoded and taken only when the decoded text holds a
known token shape (the rules of ``tokens.py``), so ordinary base64 (images, hashes) is left alone."""

from __future__ import annotations

import base64
import binascii
import re

from harnessfit.dataset.redact.rule import Rule
from harnessfit.dataset.redact.rules.tokens import TOKENS

# token prefixes (from tokens.py) and what base64 makes of them when the token starts the encoded text
_PREFIXES = (
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "sk-",
    "xoxb-",
    "xoxp-",
    "hf_",
    "npm_",
    "AKIA",
    "ASIA",
    "pypi-AgE",
    "sk_live_",
    "rk_live_",
)
_ENCODED = tuple(sorted({base64.b64encode(p.encode())[: (len(p) * 4) // 3].decode() for p in _PREFIXES}))


def _holds_token(value: str, text: str = "", start: int = 0) -> bool:
    """The value decodes (standard or URL-safe base64) to text holding one of the known token shapes."""
    padded = value + "=" * (-len(value) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            plain = decode(padded).decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if any(rule.find(plain) for rule in TOKENS if rule.kind != "basic_auth"):
            return True
    return False


_GH = "ghp_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"  # assembled: no token-shaped string in the source

ENCODED: list[Rule] = [
    Rule(
        "base64_token",
        re.compile(r"(?<![A-Za-z0-9+/_-])(?:" + "|".join(map(re.escape, _ENCODED)) + r")[A-Za-z0-9+/_-]{12,}={0,2}"),
        literals=_ENCODED,
        accept=_holds_token,
        examples=(
            "echo " + base64.b64encode(_GH.encode()).decode() + " | base64 -d",
            "data:\n  token: " + base64.b64encode((_GH + "\n").encode()).decode(),
        ),
    ),
]
