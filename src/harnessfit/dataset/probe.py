"""Measured false-positive rate of the redactor on ordinary code that must survive untouched.

A fixed, seeded set of lines of the kinds coding traces are full of — git SHAs, UUIDs, lockfile integrity hashes,
checksums, wrapped base64 data, long identifiers, versions, URLs — each run through the same ``Redactor`` the
build uses. A line counts as a false positive when redaction changes it. The rate goes into the dataset card and
the manifest, so a user sees what redaction costs in mangled code.
"""

from __future__ import annotations

import base64
import hashlib
import random
import uuid
from collections import Counter

from pydantic import BaseModel

from harnessfit.dataset.redact import Redactor

__all__ = ["FalsePositiveReport", "probe_lines", "measure_false_positive_rate"]

_WORDS = ["user", "account", "settings", "handler", "request", "response", "session", "config", "render", "parse",
          "token", "buffer", "stream", "client", "server", "widget", "theme", "selector", "message", "update"]


def probe_lines(n_per_shape: int = 40, seed: int = 7) -> list[tuple[str, str]]:
    """(shape, line) pairs; deterministic for a given seed."""
    rng = random.Random(seed)
    rb = lambda k: bytes(rng.getrandbits(8) for _ in range(k))  # noqa: E731
    out: list[tuple[str, str]] = []
    for i in range(n_per_shape):
        sha1 = hashlib.sha1(rb(16)).hexdigest()
        out.append(("git_sha", f"commit {sha1}\nMerge: {sha1[:7]} {hashlib.sha1(rb(8)).hexdigest()[:7]}"))
        out.append(("uuid", f'const id = "{uuid.UUID(bytes=rb(16), version=4)}";'))
        out.append(("npm_integrity", f'"integrity": "sha512-{base64.b64encode(rb(64)).decode()}",'))
        out.append(("yarn_checksum", f"  checksum: {hashlib.sha512(rb(8)).hexdigest()}"))
        out.append(("pip_hash", f"    --hash=sha256:{hashlib.sha256(rb(8)).hexdigest()}"))
        out.append(("cargo_checksum", f'checksum = "{hashlib.sha256(rb(8)).hexdigest()}"'))
        out.append(("docker_digest", f"FROM python:3.11-slim@sha256:{hashlib.sha256(rb(8)).hexdigest()}"))
        blob = base64.b64encode(rb(171)).decode()
        out.append(("base64_block", "\n".join(blob[j:j + 76] for j in range(0, len(blob), 76))))
        out.append(("base64_inline", f'payload = b64decode("{base64.b64encode(rb(rng.choice([18, 24, 33]))).decode()}")'))
        words = [rng.choice(_WORDS) for _ in range(5)]
        ident = words[0] + "".join(w.capitalize() for w in words[1:]) + str(rng.randint(0, 99))
        out.append(("identifier", f"export function {ident}(props) {{ return null; }}"))
        out.append(("version", f'"version": "{rng.randint(0, 20)}.{rng.randint(0, 40)}.{rng.randint(0, 99)}",'))
        out.append(("url", f"https://github.com/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}/blob/{sha1}/src/{rng.choice(_WORDS)}.ts#L{i}"))
        out.append(("env_reference", f'api_key = os.environ["{rng.choice(_WORDS).upper()}_API_KEY"]'))
        out.append(("path", f"/usr/local/lib/node_modules/{rng.choice(_WORDS)}-{rng.choice(_WORDS)}/dist/index.{i}.js"))
    return out


class FalsePositiveReport(BaseModel):
    """How many probe lines redaction changed, overall and per shape."""

    probes: int
    changed: int
    rate: float
    by_shape: dict[str, list[int]]  # shape -> [changed, probes]


def measure_false_positive_rate(redactor: Redactor, n_per_shape: int = 40, seed: int = 7) -> FalsePositiveReport:
    changed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for shape, line in probe_lines(n_per_shape, seed):
        total[shape] += 1
        if redactor.findings(line):
            changed[shape] += 1
    n = sum(total.values())
    c = sum(changed.values())
    return FalsePositiveReport(probes=n, changed=c, rate=round(c / n, 6) if n else 0.0,
                               by_shape={s: [changed[s], total[s]] for s in sorted(total)})
