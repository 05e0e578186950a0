"""Measured cost and benefit of redaction: how much ordinary code it changes (false positives) and how many
planted secrets it removes (recall), both on seeded probes generated here.

The false-positive probe is lines of the kinds coding traces are full of and that must survive untouched — git
SHAs, UUIDs and GUIDs, lockfile hashes (npm, pnpm, yarn, Cargo, pip, Poetry, Go, Nix), image digests, subresource
integrity, base64 blocks, inline base64 and base64 test vectors, data URIs, certificates, minified JavaScript,
source maps, bundle names, identifiers, versions, URLs, env references, paths. A line counts as a false positive
when redaction changes it. The planted-secret probe is one line per secret, of many kinds and layouts (known token
shapes, keyword assignments in code, YAML and ``.env`` files, headers, URLs, keys with no prefix at all); a secret
counts as caught when the redacted line no longer holds it. Both numbers go into the manifest and the dataset card,
so a user sees what redaction costs in mangled code and what it buys.
"""

from __future__ import annotations

import base64
import hashlib
import random
import string
import uuid
from collections import Counter

from pydantic import BaseModel

from harnessfit.dataset.redact import Redactor

__all__ = [
    "FalsePositiveReport",
    "RecallReport",
    "probe_lines",
    "planted_secret_lines",
    "measure_false_positive_rate",
    "measure_planted_recall",
    "measure_recall",
]

_WORDS = [
    "user",
    "account",
    "settings",
    "handler",
    "request",
    "response",
    "session",
    "config",
    "render",
    "parse",
    "token",
    "buffer",
    "stream",
    "client",
    "server",
    "widget",
    "theme",
    "selector",
    "message",
    "update",
]
_ALNUM = string.ascii_letters + string.digits


def _minified_js(rng: random.Random, rb, i: int) -> str:
    """One line of a bundler's output: short mangled names, string literals, numbers, hex colours, a hashed chunk
    name, sometimes an inline data URI."""
    v = lambda: rng.choice(string.ascii_letters) + rng.choice(["", rng.choice(_ALNUM)])  # noqa: E731
    parts = [
        f"var {v()}={v()}({rng.randint(0, 999)}),{v()}=function({v()},{v()}){{return {v()}&&{v()}.__esModule?"
        f"{v()}.default:{v()}}}",
        f'{v()}.exports={{primary:"#{rb(3).hex()}",name:"{rng.choice(_WORDS)}-{rng.choice(_WORDS)}"}}',
        f'{v()}.p+"static/js/"+{{{rng.randint(1, 999)}:"{rb(4).hex()}"}}[{v()}]+".chunk.js"',
        f"for(var {v()}=0;{v()}<{v()}.length;{v()}++){v()}[{v()}]={v()}.charCodeAt({v()})^{rng.randint(1, 255)}",
    ]
    if i % 3 == 0:
        parts.append(f'{v()}.src="data:image/png;base64,{base64.b64encode(rb(rng.randint(40, 120))).decode()}"')
    rng.shuffle(parts)
    return ";".join(parts) + ";"


def _source_map(rng: random.Random) -> str:
    """A source map's ``mappings`` field: base64 VLQ segments separated by commas and semicolons."""
    vlq = string.ascii_letters + string.digits + "+/"
    groups = [
        ",".join("".join(rng.choice(vlq) for _ in range(rng.choice([4, 5, 6, 8]))) for _ in range(8)) for _ in range(4)
    ]
    return f'{{"version":3,"sources":["../src/{rng.choice(_WORDS)}.ts"],"mappings":"{";".join(groups)}"}}'


def _test_vector(rng: random.Random, rb) -> str:
    """An expected value in a test of an encoder or a hash: base64 of a phrase or of random bytes."""
    data = (
        (" ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 8)))).encode()
        if rng.random() < 0.5
        else rb(rng.randint(16, 48))
    )
    b64 = base64.b64encode(data).decode()
    return rng.choice(
        [
            f'    expect(encode({data!r})).toBe("{b64}");',
            f'    ({data!r}, "{b64}"),',
            f'assert to_base64(payload) == "{b64}"',
            f'        XCTAssertEqual(digest.base64EncodedString(), "{base64.b64encode(hashlib.sha256(data).digest()).decode()}")',
        ]
    )


def probe_lines(n_per_shape: int = 50, seed: int = 7) -> list[tuple[str, str]]:
    """(shape, line) pairs of ordinary code; deterministic for a given seed."""
    rng = random.Random(seed)
    rb = lambda k: bytes(rng.getrandbits(8) for _ in range(k))  # noqa: E731
    b64 = lambda k: base64.b64encode(rb(k)).decode()  # noqa: E731
    word = lambda: rng.choice(_WORDS)  # noqa: E731
    out: list[tuple[str, str]] = []
    for i in range(n_per_shape):
        sha1 = hashlib.sha1(rb(16)).hexdigest()
        sha256 = hashlib.sha256(rb(8)).hexdigest()
        out.append(("git_sha", f"commit {sha1}\nMerge: {sha1[:7]} {hashlib.sha1(rb(8)).hexdigest()[:7]}"))
        out.append(("uuid", f'const id = "{uuid.UUID(bytes=rb(16), version=4)}";'))
        out.append(("guid", f'[Guid("{str(uuid.UUID(bytes=rb(16))).upper()}")] // {uuid.UUID(bytes=rb(16)).hex}'))
        out.append(("npm_integrity", f'"integrity": "sha512-{b64(64)}",'))
        out.append(("pnpm_lock", f"    resolution: {{integrity: sha512-{b64(64)}}}"))
        out.append(("yarn_checksum", f"  checksum: {hashlib.sha512(rb(8)).hexdigest()}"))
        out.append(
            ("yarn_resolved", f'  resolved "https://registry.yarnpkg.com/{word()}/-/{word()}-1.{i}.0.tgz#{sha1}"')
        )
        out.append(("pip_hash", f"    --hash=sha256:{sha256}"))
        out.append(("poetry_hash", f'    {{file = "{word()}-1.{i}-py3-none-any.whl", hash = "sha256:{sha256}"}},'))
        out.append(("cargo_checksum", f'checksum = "{sha256}"'))
        out.append(("go_sum", f"golang.org/x/{word()} v0.{i}.0 h1:{b64(32)}"))
        out.append(("nix_hash", f'    hash = "sha256-{b64(32)}";'))
        out.append(("docker_digest", f"FROM python:3.11-slim@sha256:{sha256}"))
        out.append(
            (
                "sri",
                f'<script src="https://cdn.example.org/{word()}.min.js" integrity="sha384-{b64(48)}" '
                'crossorigin="anonymous"></script>',
            )
        )
        blob = b64(171)
        out.append(("base64_block", "\n".join(blob[j : j + 76] for j in range(0, len(blob), 76))))
        cert = b64(rng.randint(300, 420))
        pem = "\n".join(cert[j : j + 64] for j in range(0, len(cert), 64))
        out.append(("certificate", f"-----BEGIN CERTIFICATE-----\n{pem}\n-----END CERTIFICATE-----"))
        out.append(("base64_inline", f'payload = b64decode("{b64(rng.choice([18, 24, 33]))}")'))
        out.append(("base64_test_vector", _test_vector(rng, rb)))
        out.append(("data_uri", f"  background: url(data:image/png;base64,{b64(rng.randint(30, 90))});"))
        out.append(("minified_js", _minified_js(rng, rb, i)))
        out.append(("source_map", _source_map(rng)))
        words = [word() for _ in range(5)]
        ident = words[0] + "".join(w.capitalize() for w in words[1:]) + str(rng.randint(0, 99))
        out.append(("identifier", f"export function {ident}(props) {{ return null; }}"))
        out.append(("version", f'"version": "{rng.randint(0, 20)}.{rng.randint(0, 40)}.{rng.randint(0, 99)}",'))
        out.append(("url", f"https://github.com/{word()}/{word()}/blob/{sha1}/src/{word()}.ts#L{i}"))
        out.append(("env_reference", f'api_key = os.environ["{word().upper()}_API_KEY"]'))
        out.append(("path", f"/usr/local/lib/node_modules/{word()}-{word()}/dist/index.{i}.js"))
    return out


def planted_secret_lines(n_per_kind: int = 3, seed: int = 11) -> list[tuple[str, str, str]]:
    """(kind, line, secret) triples: a line of code, config or output that holds one secret, and the exact secret
    string that must not survive redaction. Generated at run time (no file holds a token-shaped string)."""
    rng = random.Random(seed)
    rs = lambda n, al=_ALNUM: "".join(rng.choice(al) for _ in range(n))  # noqa: E731
    up = string.ascii_uppercase + string.digits
    b64al = _ALNUM + "+/"
    out: list[tuple[str, str, str]] = []
    for _ in range(n_per_kind):
        rows = [
            ("openai", "sk-proj-" + rs(48), "OPENAI_API_KEY=sk-proj-{s}"),
            ("anthropic", "sk-ant-api03-" + rs(90), "client = Anthropic(api_key='{s}')"),
            ("github", "ghp_" + rs(36), "git push https://x-access-token:{s}@github.com/a/b"),
            ("github_pat", "github_pat_" + rs(22) + "_" + rs(59), "export GH_TOKEN={s}"),
            ("gitlab", "glpat-" + rs(20), "curl --header 'PRIVATE-TOKEN: {s}' https://gitlab.example/api/v4/projects"),
            ("aws_access_key", "AKIA" + rs(16, up), "aws_access_key_id = {s}"),
            ("aws_secret", rs(40, b64al), "aws_secret_access_key = {s}"),
            ("slack", "xoxb-" + rs(11, string.digits) + "-" + rs(24), 'SLACK_BOT_TOKEN="{s}"'),
            ("google", "AIza" + rs(35), '<script src="https://maps.googleapis.com/maps/api/js?key={s}"></script>'),
            ("stripe", "sk_live_" + rs(24), "stripe.api_key = '{s}'"),
            ("huggingface", "hf_" + rs(34), "huggingface-cli login --token {s}"),
            ("npm", "npm_" + rs(36), "//registry.npmjs.org/:_authToken={s}"),
            (
                "jwt",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI" + rs(12) + "In0." + rs(43, _ALNUM + "_-"),
                "Authorization: Bearer {s}",
            ),
            (
                "private_key",
                "\n".join(rs(64, b64al) for _ in range(4)),
                "-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n-----END OPENSSH PRIVATE KEY-----",
            ),
            ("password_quoted", rs(14) + "!", 'DB_PASSWORD="{s}"'),
            ("password_yaml", rs(10) + "9", "database:\n  password: {s}\n"),
            ("password_env", rs(12) + "7", "db_password={s}"),
            ("password_shell", rs(10) + "-3", "cd app && db_password={s} ./migrate.sh"),
            ("password_json_env", rs(11) + "5", '{{"env": ["API_TOKEN={s}", "DEBUG=0"]}}'),
            ("url_password", rs(6), "postgres://app:{s}@db.internal:5432/app"),
            ("api_key_header", rs(32), "curl -H 'X-Api-Key: {s}' https://api.example.org/v1/items"),
            ("basic_auth", base64.b64encode(f"deploy:{rs(12)}".encode()).decode(), "Authorization: Basic {s}"),
            ("k8s_secret", base64.b64encode(rs(16).encode()).decode(), "data:\n  api-token: {s}\n"),
            ("generic_key", rs(40, _ALNUM + "_-"), "const client = new Client({{ key: '{s}' }});"),
            (
                "email",
                f"{rs(6, string.ascii_lowercase)}.{rs(5, string.ascii_lowercase)}@corp-mail.io",
                "git config user.email {s}",
            ),
            ("mysql_password", rs(10) + "7", "mysql -u root -p{s} -h db.internal shop"),
            ("docker_login", rs(14) + "2", "docker login -u deploy -p {s} registry.example.org"),
            ("netrc", rs(12) + "4", "machine api.example.org login deploy password {s}"),
            ("url_access_token", rs(24), "curl 'https://api.example.org/v1/items?access_token={s}&limit=5'"),
            (
                "discord_webhook",
                rs(68, _ALNUM + "_-"),
                "curl -X POST https://discord.com/api/webhooks/" + rs(18, string.digits) + "/{s} -d @msg.json",
            ),
            ("json_pwd", rs(11) + "!", '{{"user": "admin", "pwd": "{s}"}}'),
            ("base64_token", base64.b64encode(("ghp_" + rs(36)).encode()).decode(), "echo {s} | base64 -d"),
        ]
        out += [(kind, text.format(s=secret), secret) for kind, secret, text in rows]
    return out


class FalsePositiveReport(BaseModel):
    """How many probe lines redaction changed, overall and per shape."""

    probes: int
    changed: int
    rate: float
    by_shape: dict[str, list[int]]  # shape -> [changed, probes]


class RecallReport(BaseModel):
    """How many planted secrets redaction removed, overall and per kind."""

    planted: int
    caught: int
    rate: float
    by_kind: dict[str, list[int]]  # kind -> [caught, planted]


def measure_false_positive_rate(redactor: Redactor, n_per_shape: int = 50, seed: int = 7) -> FalsePositiveReport:
    changed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for shape, line in probe_lines(n_per_shape, seed):
        total[shape] += 1
        if redactor.findings(line):
            changed[shape] += 1
    n = sum(total.values())
    c = sum(changed.values())
    return FalsePositiveReport(
        probes=n,
        changed=c,
        rate=round(c / n, 6) if n else 0.0,
        by_shape={s: [changed[s], total[s]] for s in sorted(total)},
    )


def measure_planted_recall(redactor: Redactor, n_per_kind: int = 3, seed: int = 11) -> RecallReport:
    """Recall on ``planted_secret_lines``: the kinds the rules were written against (a held-apart set, measured
    with ``measure_recall``, is in ``bench/redaction_recall.py``)."""
    return measure_recall(redactor, planted_secret_lines(n_per_kind, seed))


def measure_recall(redactor: Redactor, lines: list[tuple[str, str, str]]) -> RecallReport:
    """Each (kind, line, secret) line redacted as a conversation's text would be; caught when the secret is gone
    from it."""
    caught: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for kind, line, secret in lines:
        total[kind] += 1
        sub = redactor.substituter(redactor.placeholders([line]), Counter())
        if secret not in (sub(line) or ""):
            caught[kind] += 1
    n = sum(total.values())
    c = sum(caught.values())
    return RecallReport(
        planted=n,
        caught=c,
        rate=round(c / n, 6) if n else 0.0,
        by_kind={k: [caught[k], total[k]] for k in sorted(total)},
    )
