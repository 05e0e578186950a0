"""E-mail addresses, except git's ``git@host``, reserved example/test domains and ``name@2x.png``-like file names."""

from __future__ import annotations

import re
from collections.abc import Iterator

from harnessfit.dataset.redact.rule import Joined, Rule

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,24}(?![A-Za-z0-9-])"
)
_SKIP_DOMAINS = re.compile(r"(?i)(?:^|\.)(?:example\.(?:com|org|net)|[a-z0-9-]+\.(?:invalid|test|example|localhost))$")
_FILE_EXTENSIONS = {
    "png",
    "jpg",
    "jpeg",
    "gif",
    "svg",
    "webp",
    "ico",
    "js",
    "ts",
    "tsx",
    "jsx",
    "mjs",
    "cjs",
    "json",
    "css",
    "scss",
    "md",
    "py",
    "html",
    "txt",
    "yml",
    "yaml",
    "toml",
    "lock",
    "map",
    "wasm",
    "rs",
    "go",
}
_LOCAL_TAIL = re.compile(r"[A-Za-z0-9._%+-]{1,65}\Z")


def _accept(value: str, text: str, start: int) -> bool:
    local_part, _, domain = value.rpartition("@")
    if local_part.lower() == "git" or _SKIP_DOMAINS.search(domain):
        return False
    return domain.rsplit(".", 1)[-1].lower() not in _FILE_EXTENSIONS


def _starts(joined: Joined) -> Iterator[int]:
    """Where matches can start: for each ``@``, the start of the run of local-part characters just before it when
    that run is 1-64 long (the lookbehind refuses a start inside the run, and the local part holds no ``@``)."""
    corpus = joined.text
    at = corpus.find("@")
    while at >= 0:
        m = _LOCAL_TAIL.search(corpus, max(0, at - 65), at)  # endpos=at: \Z is the ``@``
        if m is not None and at - m.start() <= 64:
            yield m.start()
        at = corpus.find("@", at + 1)


EMAIL: list[Rule] = [
    Rule(
        "email",
        _EMAIL,
        literals=("@",),
        accept=_accept,
        starts=_starts,
        placeholder="email",
        examples=("contact jane.roe@corp-mail.io", "x.y@a.b.co"),
    ),
]
