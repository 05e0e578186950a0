"""Known token shapes (our own patterns). Most start with a fixed literal, which is also their guard; the group
named ``v``, where there is one, is the secret itself. Examples are assembled from pieces so no file holds a
token-shaped string."""

from __future__ import annotations

import re

from harnessfit.dataset.redact.rule import Rule, nonempty, placeholder_like

_A = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6"  # a mixed-class filler, sliced to length
_KEY_BODY = "\n".join(_A[:70] for _ in range(3))

_DOC_PASSWORDS = {
    "password",
    "passwd",
    "pass",
    "pwd",
    "secret",
    "token",
    "changeme",
    "xxx",
    "xxxx",
    "***",
    "****",
    "user",
    "username",
    "name",
    "p",
    "x",
}
_TEMPLATE = re.compile(r"[${}<>%]|\A\d+(?:\.\d+)*\Z|\A[*x]+\Z", re.IGNORECASE)


def _url_password(value: str, text: str, start: int) -> bool:
    """Any password in a URL except a template (``${PASS}``, ``<password>``), a version or port (``22.04``),
    stars or x's, a word documentation writes there (``user:password@``) and an existing placeholder."""
    return value.lower() not in _DOC_PASSWORDS and not _TEMPLATE.search(value) and not placeholder_like(value)


def _basic_credentials(value: str, text: str, start: int) -> bool:
    """An HTTP Basic credential: base64 of ``user:password`` with a password (never an ordinary word after
    "basic")."""
    import base64
    import binascii

    try:
        pair = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):  # ValueError: a non-ASCII letter the case-insensitive class let in
        return False
    _user, sep, password = pair.partition(":")
    return bool(sep and password) and pair.isprintable()


TOKENS: list[Rule] = [
    Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]{16,}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        ),
        literals=("PRIVATE KEY",),
        accept=nonempty,
        examples=("-----BEGIN RSA PRIVATE KEY-----\n" + _KEY_BODY + "\n-----END RSA PRIVATE KEY-----",),
    ),
    Rule(
        "anthropic_key",
        re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9]{2,8}-[A-Za-z0-9_-]{20,}"),
        literals=("sk-ant-",),
        examples=("key: sk-ant-api03-" + _A[:40],),
    ),
    Rule(
        "openai_key",
        re.compile(r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        literals=("sk-",),
        examples=("OPENAI_API_KEY=sk-proj-" + _A[:48], "sk-" + _A[:20]),
    ),
    Rule(
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})"),
        literals=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        examples=("ghp_" + _A[:36], "token github_pat_" + _A[:22] + "_" + _A[:30]),
    ),
    Rule(
        "gitlab_token",
        re.compile(r"(?<![A-Za-z0-9_])glpat-[A-Za-z0-9_-]{20,}"),
        literals=("glpat-",),
        examples=("glpat-" + _A[:24],),
    ),
    Rule(
        "slack_token",
        re.compile(r"(?<![A-Za-z0-9_])xox[abposr]-[A-Za-z0-9-]{10,}"),
        literals=("xox",),
        examples=("SLACK=xoxb-" + "12345678901-" + _A[:24],),
    ),
    Rule(
        "discord_webhook",
        re.compile(
            r"(?i)https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/"
            r"(?P<v>[A-Za-z0-9_-]{60,80})"
        ),
        literals=("discord",),
        accept=nonempty,
        examples=("curl -X POST https://discord.com/api/webhooks/" + "1234567890" * 2 + "/" + (_A + _A)[:68],),
    ),
    Rule(
        "slack_webhook",
        re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9_/-]{20,}"),
        literals=("hooks.slack.com",),
        examples=("https://hooks.slack.com/services/T0/B1/" + _A[:24],),
    ),
    Rule(
        "aws_access_key",
        re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
        literals=("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        accept=nonempty,
        examples=("AKIA" + _A[:32:2].upper(),),
    ),
    Rule(
        "aws_secret_key",
        re.compile(
            r"(?i)aws_?secret(?:_?access)?_?key[\"']?\s*[:=]\s*[\"']?(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        literals=("aws",),
        examples=('aws_secret_access_key = "' + _A[:40] + '"',),
    ),
    Rule(
        "google_api_key",
        re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"),
        literals=("AIza",),
        examples=("maps key AIza" + _A[:35],),
    ),
    Rule(
        "stripe_key",
        re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"),
        literals=("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
        examples=("stripe sk_live_" + _A[:24],),
    ),
    Rule(
        "huggingface_token",
        re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}"),
        literals=("hf_",),
        examples=("HF_TOKEN=hf_" + _A[:34],),
    ),
    Rule(
        "npm_token",
        re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
        literals=("npm_",),
        examples=("npm_" + _A[:36],),
    ),
    Rule(
        "pypi_token",
        re.compile(r"(?<![A-Za-z0-9_])pypi-AgE[A-Za-z0-9_-]{50,}"),
        literals=("pypi-AgE",),
        examples=("pypi-AgE" + _A[:50],),
    ),
    Rule(
        "jwt",
        re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}"),
        literals=("eyJ",),
        examples=("Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + _A[:12] + "In0." + _A[:43],),
    ),
    Rule(
        "bearer_token",
        re.compile(r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/=-]{20,})"),
        literals=("bearer",),
        examples=("Authorization: Bearer " + _A[:32],),
    ),
    Rule(
        "basic_auth",
        re.compile(r"(?i)\bbasic[ \t]+(?P<v>[A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])"),
        literals=("basic",),
        accept=_basic_credentials,
        examples=("Authorization: Basic ZGVwbG95OlN1cDNyUGFzcw==", "curl -H 'authorization: basic YTpi'"),
    ),
    # the password of a URL, however short (``postgres://app:pw@db``), but not a template, a version or a word
    # documentation puts there
    Rule(
        "url_credentials",
        re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@\"']{0,64}:(?P<v>[^\s:/@\"']{1,128})@[A-Za-z0-9.-]+"),
        literals=("://",),
        accept=_url_password,
        examples=(
            "git push https://x-access-token:" + _A[:20] + "@github.com/a/b",
            "postgres://app:pw@db:5432/x",
            "redis://:abc12@cache:6379",
        ),
    ),
]
