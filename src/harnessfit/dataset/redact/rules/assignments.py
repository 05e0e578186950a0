"""Secrets assigned to a keyword: a quoted value after ``password``/``token``/``api_key``…, and an unquoted value
in an env-style ``…PASSWORD=…`` line. The value (group ``v``) is the finding."""

from __future__ import annotations

import re

from harnessfit.dataset.redact.rule import Rule

ASSIGNMENTS: list[Rule] = [
    # the keywords, as literals every match starts with (case-insensitively)
    Rule("password_assignment", re.compile(
        r"(?i)(?:passw(?:or)?d|secret|token|api_?key|apikey|access_?key|auth_?key|private_?key|credentials?)"
        r"[A-Za-z0-9_]{0,40}[\"']?\s{0,4}[:=]\s{0,4}(?P<q>[\"'])(?P<v>[^\"'\s]{8,200})(?P=q)"),
        literals=("passw", "secret", "token", "credential", "api_key", "apikey", "access_key", "accesskey", "auth_key",
                  "authkey", "private_key", "privatekey"),
        examples=('DB_PASSWORD="Sup3rS3cret!x"', "token: 'abcd1234efgh'", 'api_key = "k3y-v4lue-here"')),
    Rule("password_assignment", re.compile(
        r"(?m)^\s*(?:export\s+)?[A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY)[A-Z0-9_]*"
        r"\s*=\s*(?P<v>[^\s\"'#$]{8,200})"),
        literals=("PASSWORD", "PASSWD", "SECRET", "TOKEN", "API_KEY", "APIKEY", "ACCESS_KEY", "PRIVATE_KEY"),
        examples=("export DB_PASSWORD=Sup3rS3cret!", "  GITHUB_TOKEN=ghx1234567890")),
]
