"""Redaction recall on a HELD-APART set: secret kinds taken from public secret-scanner rule lists (gitleaks and
trufflehog rule ids), not the kinds harnessfit's rules were written against (``dataset.probe.planted_secret_lines``,
the build's own "planted secrets removed" figure). The values are generated here at run time, fake and of each
provider's documented shape, and placed in the lines a coding agent's trace would hold them in (an ``.env`` line, a
``curl`` flag, a config file, a bare paste). The rules were not tuned against this set after it was measured.

    .venv/bin/python bench/redaction_recall.py [--per-kind 3] [--seed 5]
Prints one JSON object: recall overall and per kind (caught, planted), the kinds missed, and the build's own set
measured in the same run for comparison.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import uuid

HEX = "0123456789abcdef"
ALNUM = string.ascii_letters + string.digits


def held_apart_lines(per_kind: int, seed: int) -> list[tuple[str, str, str]]:
    """(kind, line, secret): the kind is the scanner rule id the shape comes from."""
    rng = random.Random(seed)

    def rs(n: int, alphabet: str = ALNUM) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    out = []
    for _ in range(per_kind):
        rows = [
            ("twilio-api-key", "SK" + rs(32, HEX), "TWILIO_API_KEY={s}"),
            ("sendgrid-api-token", "SG." + rs(22, ALNUM + "_-") + "." + rs(43, ALNUM + "_-"),
             "sg = SendGridAPIClient('{s}')"),
            ("mailgun-private-api-token", "key-" + rs(32, HEX), "curl -s --user 'api:{s}' https://api.mailgun.net/v3"),
            ("shopify-access-token", "shpat_" + rs(32, HEX), "X-Shopify-Access-Token: {s}"),
            ("square-access-token", "EAAA" + rs(60, ALNUM + "_-"), "square_token: {s}"),
            ("heroku-api-key", str(uuid.UUID(int=rng.getrandbits(128))), "export HEROKU_API_KEY={s}"),
            ("digitalocean-pat", "dop_v1_" + rs(64, HEX), "doctl auth init -t {s}"),
            ("linear-api-key", "lin_api_" + rs(40), "LINEAR_API_KEY: {s}"),
            ("doppler-api-token", "dp.pt." + rs(43), "doppler configure set token {s}"),
            ("databricks-api-token", "dapi" + rs(32, HEX), "databricks_token = \"{s}\""),
            ("azure-storage-account-key", rs(86, ALNUM + "+/") + "==",
             "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};EndpointSuffix=core.windows.net"),
            ("telegram-bot-api-token", rs(10, string.digits) + ":AA" + rs(33, ALNUM + "_-"),
             "curl https://api.telegram.org/bot{s}/getMe"),
            ("mailchimp-api-key", rs(32, HEX) + "-us" + rs(2, string.digits), "MAILCHIMP_KEY={s}"),
            ("new-relic-user-api-key", "NRAK-" + rs(27, string.ascii_uppercase + string.digits), "newrelic: {s}"),
            ("sentry-dsn-key", rs(32, HEX), "SENTRY_DSN=https://{s}@o" + rs(6, string.digits) + ".ingest.sentry.io/1"),
            ("age-secret-key", "AGE-SECRET-KEY-1" + rs(58, string.ascii_uppercase + string.digits), "{s}"),
            ("pulumi-api-token", "pul-" + rs(40, HEX), "pulumi login --access-token {s}"),
            ("planetscale-api-token", "pscale_tkn_" + rs(43, ALNUM + "_-"), "PLANETSCALE_TOKEN={s}"),
            ("datadog-api-key", rs(32, HEX), "DD_API_KEY={s} datadog-agent start"),
            ("atlassian-api-token", rs(24), "curl -u me@acme.example:{s} https://acme.atlassian.net/rest/api/3/myself"),
            ("flyio-access-token", "FlyV1 fm2_" + rs(60, ALNUM + "+/"), "fly auth token: {s}"),
            ("postman-api-token", "PMAK-" + rs(24, HEX) + "-" + rs(34, HEX), "postman login --with-api-key {s}"),
        ]
        out += [(kind, text.format(s=secret), secret) for kind, secret, text in rows]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-kind", type=int, default=3)
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    from harnessfit.dataset.probe import measure_planted_recall, measure_recall
    from harnessfit.dataset.redact import Redactor

    redactor = Redactor()
    held = measure_recall(redactor, held_apart_lines(a.per_kind, a.seed))
    own = measure_planted_recall(redactor)
    print(json.dumps({
        "bench": "redaction_recall",
        "held_apart": {"set": "held-apart: gitleaks / trufflehog rule ids, not the rules' own kinds",
                       "planted": held.planted, "caught": held.caught, "recall": held.rate,
                       "missed_kinds": sorted(k for k, (c, n) in held.by_kind.items() if c < n),
                       "by_kind": held.by_kind},
        "own_set": {"set": "the kinds the rules were written against (dataset.probe.planted_secret_lines)",
                    "planted": own.planted, "caught": own.caught, "recall": own.rate},
    }, indent=1))


if __name__ == "__main__":
    main()
