"""Secrets a command line or a credentials file carries outside a ``key=value`` assignment: a database client's
attached ``-pPASSWORD``, ``docker login -p``, any ``--password VALUE`` / ``--password=VALUE`` flag, a ``.netrc``
``password`` field, a secret-named query parameter in a URL (``?access_token=…``) and a JSON/YAML ``"pwd"``-style
key the assignment rules do not name. The group ``v`` is the secret.

Each one is tied to the context that makes it a secret, because the same characters are ordinary elsewhere:
``docker run -p 8080:80`` (a port), ``mysql -p`` with nothing attached (the prompt), ``--password-stdin``, a
``password`` word in prose, ``?page=2``. A value must also look like one (``plausible``; the netrc and ``-p``
forms, which take short values, ask for a digit or a symbol and no template)."""

from __future__ import annotations

import re

from harnessfit.dataset.redact.rule import Rule, placeholder_like, plausible

_A = "k7Qm2Xp9Lw4Rt8Vb"  # a mixed-class filler, sliced to length (examples are assembled, never token-shaped text)
_DIGIT_OR_SYMBOL = re.compile(r"[0-9!@%^*+=~?/#_-]")


def _short_secret(value: str, text: str = "", start: int = 0) -> bool:
    """A short credential: at least 4 characters, a digit or a symbol (a bare word is a flag value or prose), no
    template or placeholder."""
    return (
        len(value) >= 4
        and bool(_DIGIT_OR_SYMBOL.search(value))
        and not placeholder_like(value)
        and not re.search(r"[${}<>]", value)
    )


COMMANDS: list[Rule] = [
    # MySQL / MariaDB clients take the password attached to -p (``-pSECRET``); ``-p`` alone prompts for it
    Rule(
        "cli_password",
        re.compile(
            r"(?<![A-Za-z0-9_-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mysqlcheck|mariadb|mariadb-dump)"
            r"(?=[ \t])[^\n;|&]{0,200}?[ \t]-p(?P<v>[^\s'\"]{3,200})"
        ),
        literals=("mysql", "mariadb"),
        accept=_short_secret,
        examples=("mysql -u root -p" + _A[:12] + " shop", "mysqldump -h db -u app -p" + _A[:9] + "! app > x.sql"),
    ),
    # ``docker login -p SECRET`` (``docker run -p 8080:80`` is a port: only after ``login``)
    Rule(
        "cli_password",
        re.compile(
            r"(?<![A-Za-z0-9_-])(?:docker|podman|nerdctl)[ \t]+login\b[^\n;|&]{0,200}?[ \t]-p[ \t]+(?P<v>[^\s'\"]{3,200})"
        ),
        literals=("docker", "podman", "nerdctl"),
        accept=_short_secret,
        examples=("docker login -u deploy -p " + _A[:14] + " registry.example.org",),
    ),
    # any ``--password VALUE`` / ``--password=VALUE`` flag (``--password-stdin`` and ``--password-file`` are not)
    Rule(
        "cli_password",
        re.compile(r"(?<![A-Za-z0-9_-])--(?:db-)?pass(?:word)?(?:=|[ \t]+)(?P<v>[^\s'\"]{4,200})"),
        literals=("--pass", "--db-pass"),
        accept=_short_secret,
        examples=(
            "mysql --user=root --password=" + _A[:12] + " shop",
            "docker login --username deploy --password " + _A[:11] + " ghcr.io",
        ),
    ),
    # a .netrc entry: ``machine HOST login USER password SECRET`` (one line or several)
    Rule(
        "netrc_password",
        re.compile(
            r"(?i)(?<![A-Za-z0-9_-])(?:machine|login)[ \t]+[^\s]{1,200}(?:\s+(?:login|account)[ \t]+[^\s]{1,200}){0,2}"
            r"\s+password[ \t]+(?P<v>[^\s'\"]{4,200})"
        ),
        literals=("machine", "login"),
        accept=_short_secret,
        examples=(
            "machine api.example.org login deploy password " + _A[:13],
            "machine git.example.org\n  login bot\n  password " + _A[:10] + "#",
        ),
    ),
    # a secret-named query parameter in a URL
    Rule(
        "url_token_param",
        re.compile(
            r"(?i)[?&](?:access_token|refresh_token|id_token|auth_token|token|api_key|apikey|client_secret|secret|"
            r"password|passwd|sig|signature|x-amz-signature|x-goog-signature)=(?P<v>[^&#\s'\"<>]{8,500})"
        ),
        literals=("token=", "api_key=", "apikey=", "secret=", "password=", "passwd=", "sig=", "signature="),
        accept=plausible,
        examples=(
            "curl 'https://api.example.org/v1/items?access_token=" + _A + "&limit=5'",
            "GET /export?id=4&apikey=" + _A[:14],
        ),
    ),
    # a JSON / YAML / Python key the assignment rules do not name: "pwd", "pass", "pw", "passphrase"
    Rule(
        "password_assignment",
        re.compile(
            r"(?i)[\"']?(?<![A-Za-z0-9_])(?:pwd|pw|pass|passphrase|db_pass|db_pwd)[\"']?[ \t]*[:=][ \t]*(?P<q>[\"'])"
            r"(?P<v>[^\"'\s]{4,200})(?P=q)"
        ),
        literals=("pwd", "pw", "pass"),
        accept=_short_secret,
        examples=('{"user": "admin", "pwd": "' + _A[:10] + '"}', "pass: '" + _A[:8] + "!'"),
    ),
]
