"""Secrets assigned to a keyword: a quoted value after ``password``/``token``/``api_key``…, an unquoted value in an
env-style ``…PASSWORD=…`` line (upper case, or any case written ``key=value`` as a ``.env`` line, a shell assignment
or a whole quoted string such as a JSON list of env entries), an HTTP header that carries a key, and an unquoted YAML
value (``password: value`` alone on its line). The value (group ``v``) is the finding.

The unquoted forms sit next to code that looks alike (``password: str``, ``token=self.token``,
``secretName: tls-cert``), so they take a value only when it ends where the line, the command or the string ends,
holds no code punctuation, holds a digit or a symbol (a bare word is a type or a name), and the key is not one that
names a secret rather than holding it (``…name``, ``…file``, ``…path``, ``…id``, ``…url``…)."""

from __future__ import annotations

import re

from harnessfit.dataset.redact.rule import Rule, placeholder_like

_KEYWORDS = r"(?:passw(?:or)?d|secret|token|api_?key|apikey|access_?key|auth_?key|private_?key|credentials?)"
_LITERALS = (
    "passw",
    "secret",
    "token",
    "credential",
    "api_key",
    "apikey",
    "access_key",
    "accesskey",
    "auth_key",
    "authkey",
    "private_key",
    "privatekey",
)
_UNQUOTED = r"[^\s\"'#$;,(){}\[\]<>|&`]{4,200}"  # a value with no code punctuation
_KEY = re.compile(r"[ \t]*(?:(?:export|env)[ \t]+)?(?P<key>[A-Za-z0-9_.-]+)")
_NAMES_A_SECRET = re.compile(
    r"(?i)(?:name|names|file|path|dir|ref|id|ids|url|uri|type|len|length|size|env|var|"
    r"field|header|param|prefix|suffix|count|ttl|expiry|expires|expires_at|_at)$"
)
_DIGIT_OR_SYMBOL = re.compile(r"[0-9!@%^*+=~?/]")


def _unquoted_secret(value: str, text: str, start: int) -> bool:
    """An unquoted value that may be a secret (see the module docstring); ``start``: the line's start."""
    if len(value) < 6 or not _DIGIT_OR_SYMBOL.search(value) or placeholder_like(value):
        return False
    key = _KEY.match(text, start)
    return key is None or not _NAMES_A_SECRET.search(key.group("key"))


ASSIGNMENTS: list[Rule] = [
    # the keywords, as literals every match starts with (case-insensitively)
    Rule(
        "password_assignment",
        re.compile(
            r"(?i)(?:passw(?:or)?d|secret|token|api_?key|apikey|access_?key|auth_?key|private_?key|credentials?)"
            r"[A-Za-z0-9_]{0,40}[\"']?\s{0,4}[:=]\s{0,4}(?P<q>[\"'])(?P<v>[^\"'\s]{8,200})(?P=q)"
        ),
        literals=(
            "passw",
            "secret",
            "token",
            "credential",
            "api_key",
            "apikey",
            "access_key",
            "accesskey",
            "auth_key",
            "authkey",
            "private_key",
            "privatekey",
        ),
        examples=('DB_PASSWORD="Sup3rS3cret!x"', "token: 'abcd1234efgh'", 'api_key = "k3y-v4lue-here"'),
    ),
    Rule(
        "password_assignment",
        re.compile(
            r"(?m)^\s*(?:export\s+)?[A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY)[A-Z0-9_]*"
            r"\s*=\s*(?P<v>[^\s\"'#$]{8,200})"
        ),
        literals=("PASSWORD", "PASSWD", "SECRET", "TOKEN", "API_KEY", "APIKEY", "ACCESS_KEY", "PRIVATE_KEY"),
        examples=("export DB_PASSWORD=Sup3rS3cret!", "  GITHUB_TOKEN=ghx1234567890"),
    ),
    # a .env line or a shell assignment in any case: key=value at the start of a line or of a shell command (after
    # ``;``, ``&&``, ``||``, ``|``), the value ending the line or followed by a space or the next command
    Rule(
        "password_assignment",
        re.compile(
            r"(?im)(?:^|(?<=[;&|]))[ \t]*(?:(?:export|env)[ \t]+)?[A-Za-z0-9_]*?"
            + _KEYWORDS
            + r"[A-Za-z0-9_]*=(?P<v>"
            + _UNQUOTED
            + r")(?=[ \t;&|]|$)"
        ),
        literals=_LITERALS,
        accept=_unquoted_secret,
        examples=(
            "db_password=S3cretValue",
            "export smtp_password=mail-Pass-42 # prod",
            "cd app && db_password=S3cret-42 ./migrate.sh",
        ),
    ),
    # an HTTP header that carries a key or token (``X-Api-Key: …``, GitLab's ``PRIVATE-TOKEN: …``)
    Rule(
        "secret_header",
        re.compile(
            r"(?i)(?<![A-Za-z0-9_-])(?:x-)?(?:api-key|api-token|auth-token|access-token|private-token|vault-token)"
            r"[ \t]*:[ \t]*(?P<v>[A-Za-z0-9._~+/=-]{8,200})"
        ),
        literals=("api-key", "api-token", "auth-token", "access-token", "private-token", "vault-token"),
        examples=("curl -H 'X-Api-Key: 9fK2mQ7xLp4Rt8Vw' https://api.example.org", "PRIVATE-TOKEN: glx-1234abcd"),
    ),
    # the same key=value as a whole quoted string (a JSON or YAML list of env entries, a config written as JSON
    # text inside a tool call's arguments, ``docker run -e "DB_PASSWORD=…"``)
    Rule(
        "password_assignment",
        re.compile(
            r"(?i)(?<=[\"'])(?:export[ \t]+)?[A-Za-z0-9_]*?"
            + _KEYWORDS
            + r"[A-Za-z0-9_]*=(?P<v>"
            + _UNQUOTED
            + r")(?=[\"'])"
        ),
        literals=_LITERALS,
        accept=_unquoted_secret,
        examples=('{"env": ["db_password=S3cretValue"]}', "docker run -e 'API_TOKEN=tok-9f8e7d6c' app"),
    ),
    # a YAML mapping entry: key: value, the value the rest of the line
    Rule(
        "password_assignment",
        re.compile(
            r"(?im)^[ \t]*[A-Za-z0-9_.-]*?"
            + _KEYWORDS
            + r"[A-Za-z0-9_.-]*[ \t]*:[ \t]+(?P<v>"
            + _UNQUOTED
            + r")[ \t]*(?:#[^\n]*)?$"
        ),
        literals=_LITERALS,
        accept=_unquoted_secret,
        examples=("database:\n  password: Sup3rS3cret9\n", "client_secret: 8f3kQz!x2m  # staging"),
    ),
]
