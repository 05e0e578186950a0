"""High-entropy strings: long runs of token characters that mix upper case, lower case and digits, switch character
class often and are not hex digests, paths, hash-prefixed checksums, lines of a wrapped base64 blob or base64 data.

Base64 data (test vectors, ``b64decode("…")`` payloads, data URIs, ``go.sum`` hashes) is as random as a key, so it is
told apart by its shape and its context, not its content: a token in the standard base64 alphabet (it holds ``+``
or ``/``, or ends in ``=`` padding, and its length is a multiple of 4) or written after a base64 word on its line
(``base64``, ``b64``, ``atob``…) is data, unless a secret's name (``key``, ``secret``, ``token``, ``auth``…) comes
right before it. Providers' API keys use letters, digits, ``_`` and ``-`` (URL-safe), and a base64 secret is
nearly always assigned to a name, which keeps it (and the keyword rules see it too)."""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from itertools import pairwise

import numpy as np

from harnessfit.dataset.redact.rule import Joined, Rule

_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_.-])(?P<v>[A-Za-z0-9+/_-]{24,}={0,2})(?![A-Za-z0-9+/=_-])")
_HASH_PREFIX = re.compile(r"(?i)(?:sha(?:1|224|256|384|512)[-:=]|md5[-:=]|integrity|checksum|digest|hash)[\"'\s:=]*$")
_DATA_URI = re.compile(r";base64,$")
_BASE64_WORD = re.compile(r"(?i)base64|b64|atob|btoa")
# a secret's name right before the token: only a quote, ``:``/``=`` and spaces between (``api-token: ``,
# ``aws_secret_access_key = ``, ``"password": "``, ``Authorization: Basic ``)
_SECRET_NAME = re.compile(
    r"(?i)(?:key|secret|token|passw|pwd|auth|credential|bearer|basic|signature|private)[\w-]*"
    r"[\"']?[ \t]*[:=]?[ \t]*[\"'(]?[ \t]*$"
)
_MIN_LEN = 24
_SWITCH_SHARE = 0.35
# the characters of _TOKEN's lookbehind class: every match is made of them and sits inside a maximal run of them
_RUN_CHARS = np.zeros(128, dtype=bool)
_RUN_CHARS[[ord(c) for c in string.ascii_letters + string.digits + "+/=_.-"]] = True
_MIN_SWITCHES = math.ceil(_SWITCH_SHARE * _MIN_LEN)  # class switches of the shortest body _accept takes


def _entropy(s: str) -> float:
    counts = Counter(s)
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _accept(token: str, text: str, start: int) -> bool:
    body = token.rstrip("=")
    if not (_MIN_LEN <= len(body) <= 128):
        return False
    if re.fullmatch(r"[0-9a-fA-F-]+", body):  # git SHAs, sha256 hex, UUIDs
        return False
    if "/" in body and re.search(r"[A-Za-z]{3,}/[A-Za-z]{3,}", body):  # paths and URLs
        return False
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start]
    named = bool(_SECRET_NAME.search(before[-64:]))  # a secret's name right before: a digit is not needed
    upper = sum(ch.isupper() for ch in body)
    lower = sum(ch.islower() for ch in body)
    digits = sum(ch.isdigit() for ch in body)
    if upper < 2 or lower < 2 or (digits < 2 and not named):
        return False
    if _entropy(body) < 4.2:
        return False
    # random strings switch character class (lower/upper/digit/other) often; camelCase identifiers rarely
    cls = [0 if ch.islower() else 1 if ch.isupper() else 2 if ch.isdigit() else 3 for ch in body]
    if sum(a != b for a, b in pairwise(cls)) < _SWITCH_SHARE * len(body):
        return False
    if _HASH_PREFIX.search(text[max(0, start - 24) : start]):
        return False
    if not named and _base64_data(token, before):
        return False
    # a line of a wrapped base64 blob (MIME, PEM certificate, data files): the whole line is one token and a
    # neighbouring line is a long one too (the last line of a blob is shorter)
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    if text[line_start:line_end].strip() == token:
        prev_line = text[text.rfind("\n", 0, max(0, line_start - 1)) + 1 : max(0, line_start - 1)].strip()
        nxt_end = text.find("\n", line_end + 1)
        next_line = text[line_end + 1 : (len(text) if nxt_end < 0 else nxt_end)].strip()
        if any(len(x) >= 60 and re.fullmatch(r"[A-Za-z0-9+/=]+", x) for x in (prev_line, next_line)):
            return False
    return True


def _base64_data(token: str, before: str) -> bool:
    """Whether ``token``, with no secret's name right before it, is base64 data rather than a secret (see the module
    docstring); ``before``: its line up to it."""
    standard = len(token) % 4 == 0 and ("+" in token or "/" in token or token.endswith("="))
    return standard or bool(_BASE64_WORD.search(before)) or bool(_DATA_URI.search(before))


def _starts(joined: Joined) -> list[int]:
    """Where matches that can pass ``_accept`` start: at the starts of the maximal runs of ``_RUN_CHARS`` at least
    24 long that hold two upper-case letters and two lower-case letters and switch character class at least
    ``_MIN_SWITCHES`` times (digits are not counted: a value right after a secret's name needs none). A match (24+
    token characters, then up to two ``=``) is made of run characters and its lookbehind refuses any position
    preceded by one, so it starts at the start of such a run and lies inside it; its body counts no more letters or
    switches than the run. Skipping the other runs changes no finding: matches of different runs never overlap.
    One compiled pass over the UTF-8 (run characters are ASCII, so its runs are the text's) instead of a regex
    attempt at every position."""
    # heavy: numba, loaded by the first compiled pass (commands that build no dataset never load it)
    from harnessfit.dataset.redact import kernels

    utf8 = np.frombuffer(joined.raw, dtype=np.uint8)
    starts = kernels.entropy_runs(utf8, _RUN_CHARS, _MIN_LEN, _MIN_SWITCHES, 0)  # 0: a named value needs no digit
    if len(joined.raw) != len(joined.text) and len(starts):
        starts = kernels.char_offsets(utf8, starts)
    return starts.tolist()


ENTROPY: list[Rule] = [
    Rule(
        "high_entropy",
        _TOKEN,
        accept=_accept,
        starts=_starts,
        examples=("Q2xhdWRlQ29kZVRlc3RUb2tlbjEyMzQ1Njc4OTA", "key a1B2c3D4e5F6g7H8i9J0k1L2m3N4 end"),
    ),
]
