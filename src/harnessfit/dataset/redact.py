"""Redaction: secrets, e-mail addresses and home-folder user names replaced by stable placeholders.

Why per conversation: a trajectory reads a file and later edits it with ``oldText`` copied from what it read. If a
secret in that file were replaced by a different placeholder in each place, the edit would no longer match. So a
conversation is scanned as a whole first (every text, every tool-call argument value, every tool result), each
distinct secret gets one placeholder (``REDACTED_<KIND>_<n>``, numbered by first appearance), and then the same
value → placeholder map is applied everywhere in that conversation. Tool-call ``arguments`` are parsed, redacted
value by value and re-serialised compactly, so they stay valid JSON; untouched arguments keep their exact bytes.

Placeholders are shell-safe identifiers (no ``<``/``>``), so a redacted ``bash`` command still parses.

``keep`` strings are never rewritten nor scanned: the build passes the harness install folder, which the system
prompt names and which must stay byte-equal to what Pi sends (a ``/home/alice/...`` install folder would otherwise
become ``/home/user1/...`` in the prompt). A user name elsewhere (cwd, tool calls, results) is still redacted.
"""

from __future__ import annotations

import math
import re
import string
from bisect import bisect_right
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import ahocorasick_rs
import numpy as np
import orjson

from harnessfit.core.conversation import Conversation

__all__ = ["Redactor", "RedactionResult", "redact_text_values"]

_SECRET_MIN_LEN = 8

# --- known token shapes (our own patterns; the group named ``v`` is the secret when present) -----------------------
_SHAPES: list[tuple[str, re.Pattern[str]]] = [
    ("private_key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]{16,}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("anthropic_key", re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9]{2,8}-[A-Za-z0-9_-]{20,}")),
    ("openai_key", re.compile(r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("github_token", re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})")),
    ("gitlab_token", re.compile(r"(?<![A-Za-z0-9_])glpat-[A-Za-z0-9_-]{20,}")),
    ("slack_token", re.compile(r"(?<![A-Za-z0-9_])xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9_/-]{20,}")),
    ("aws_access_key", re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])")),
    ("aws_secret_key", re.compile(
        r"(?i)aws_?secret(?:_?access)?_?key[\"']?\s*[:=]\s*[\"']?(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])")),
    ("google_api_key", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])")),
    ("stripe_key", re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("huggingface_token", re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}")),
    ("npm_token", re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    ("pypi_token", re.compile(r"(?<![A-Za-z0-9_])pypi-AgE[A-Za-z0-9_-]{50,}")),
    ("jwt", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}")),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+(?P<v>[A-Za-z0-9._~+/=-]{20,})")),
    ("url_credentials", re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@\"']{1,64}:(?P<v>[^\s:/@\"']{6,128})@[A-Za-z0-9.-]+")),
    ("password_assignment", re.compile(
        r"(?i)(?:passw(?:or)?d|secret|token|api_?key|apikey|access_?key|auth_?key|private_?key|credentials?)"
        r"[A-Za-z0-9_]{0,40}[\"']?\s{0,4}[:=]\s{0,4}(?P<q>[\"'])(?P<v>[^\"'\s]{8,200})(?P=q)")),
    ("password_assignment", re.compile(
        r"(?m)^\s*(?:export\s+)?[A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY)[A-Z0-9_]*"
        r"\s*=\s*(?P<v>[^\s\"'#$]{8,200})")),
]

# Literal-first forms of the token shapes above: the same matches at the same spans (a lookbehind moved past the
# literal it precedes checks the same character; at the start of a string both succeed), but ``re`` can jump from
# one occurrence of the literal to the next instead of trying the lookbehind at every position (~10x faster on
# ordinary text). A test pins each against its original.
_FAST_FORMS: dict[str, re.Pattern[str]] = {
    "anthropic_key": re.compile(r"sk-ant-(?<![A-Za-z0-9_-]sk-ant-)[A-Za-z0-9]{2,8}-[A-Za-z0-9_-]{20,}"),
    "openai_key": re.compile(r"sk-(?<![A-Za-z0-9_-]sk-)(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    "github_token": re.compile(r"g(?<![A-Za-z0-9_]g)(?:h[pousr]_[A-Za-z0-9]{36,251}|ithub_pat_[A-Za-z0-9_]{22,255})"),
    "gitlab_token": re.compile(r"glpat-(?<![A-Za-z0-9_]glpat-)[A-Za-z0-9_-]{20,}"),
    "slack_token": re.compile(r"xox(?<![A-Za-z0-9_]xox)[abposr]-[A-Za-z0-9-]{10,}"),
    "aws_access_key": re.compile(r"A(?<![A-Za-z0-9]A)(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"),
    "google_api_key": re.compile(r"AIza(?<![A-Za-z0-9_-]AIza)[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"),
    "stripe_key": re.compile(r"[rs]k_(?<![A-Za-z0-9_][rs]k_)(?:live|test)_[0-9A-Za-z]{16,}"),
    "huggingface_token": re.compile(r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z0-9]{30,}"),
    "npm_token": re.compile(r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    "pypi_token": re.compile(r"pypi-AgE(?<![A-Za-z0-9_]pypi-AgE)[A-Za-z0-9_-]{50,}"),
    "jwt": re.compile(r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}"),
    # these two already start with their literal
    "private_key": next(pat for kind, pat in _SHAPES if kind == "private_key"),
    "slack_webhook": next(pat for kind, pat in _SHAPES if kind == "slack_webhook"),
}

_PW_QUOTED, _PW_ENV = (pat for kind, pat in _SHAPES if kind == "password_assignment")
# every match of _PW_QUOTED starts with one of these (lower-cased); every match of _PW_ENV contains one of the second
_PW_QUOTED_STARTS = ("passw", "secret", "token", "api", "access", "auth", "private", "credential")
_PW_ENV_LITERALS = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "API_KEY", "APIKEY", "ACCESS_KEY", "PRIVATE_KEY")


def _matches(pat: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """``pat.finditer(text)``, with exact shortcuts for the two assignment patterns, whose case-insensitive keyword
    alternation makes a full scan the costliest of all: the env-style one runs only when one of its upper-case
    keywords occurs; the quoted one (on ASCII text, where lower-casing keeps positions and ``(?i)`` has no
    non-ASCII folds) is tried only at positions where one of its keywords starts, skipping positions inside the
    previous match, which is what ``finditer``'s left-to-right scan finds."""
    if pat is _PW_ENV:
        if any(lit in text for lit in _PW_ENV_LITERALS):
            yield from pat.finditer(text)
        return
    if pat is not _PW_QUOTED or not text.isascii():
        yield from pat.finditer(text)
        return
    low = text.lower()
    starts: set[int] = set()
    for kw in _PW_QUOTED_STARTS:
        i = low.find(kw)
        while i >= 0:
            starts.add(i)
            i = low.find(kw, i + 1)
    end = 0
    for i in sorted(starts):
        if i < end:
            continue
        m = pat.match(text, i)
        if m is not None:
            yield m
            end = m.end()


_JSON_ESCAPED = frozenset('"\\' + "".join(map(chr, range(32))))  # characters JSON writes only as escapes
_PW_KEY_PREFIXES = ("api_", "api", "access_", "access", "auth_", "auth", "private_", "private")
_PW_KEY_PREFIX_ENDS = frozenset("_iIsShHeE")  # their last characters, either case


def _pw_quoted_starts(corpus: str, occ: dict[tuple[bool, str], list[int] | None]) -> list[int] | None:
    """Where ``_PW_QUOTED`` matches can start in ``corpus``, from the guard literals' offsets ``occ`` (see
    ``Redactor._occurrences``): at ``passw``, ``secret``, ``token`` and ``credential``, and at the ``api``/
    ``access``/``auth``/``private`` (``_``) just before a ``key`` (its other keyword starts). None when that is not
    exact: a corpus holding one of the non-ASCII letters ``(?i)`` folds to ASCII (``_FOLDS``; one can stand inside
    a keyword). Otherwise only ASCII letters can spell a keyword, and ``occ`` holds each one's offsets."""
    if not corpus.isascii() and any(ch in corpus for ch in _FOLD_CHARS):
        return None
    starts: set[int] = set()
    for lit in ("passw", "secret", "token", "credential"):
        starts.update(occ.get((True, lit)) or ())
    for at in occ.get((True, "key")) or ():
        if at and corpus[at - 1] in _PW_KEY_PREFIX_ENDS:
            for p in _PW_KEY_PREFIXES:
                if at >= len(p) and corpus[at - len(p):at].lower() == p:
                    starts.add(at - len(p))
    return sorted(starts)


# cheap substring guards: a shape's regex runs only when one of these occurs in the text (``lower`` = case-insensitive)
_GUARDS: dict[str, tuple[bool, tuple[str, ...]]] = {
    "private_key": (False, ("PRIVATE KEY",)), "anthropic_key": (False, ("sk-ant-",)), "openai_key": (False, ("sk-",)),
    "github_token": (False, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")), "gitlab_token": (False, ("glpat-",)),
    "slack_token": (False, ("xox",)), "slack_webhook": (False, ("hooks.slack.com",)),
    "aws_access_key": (False, ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")), "aws_secret_key": (True, ("secret",)),
    "google_api_key": (False, ("AIza",)), "stripe_key": (False, ("_live_", "_test_")), "huggingface_token": (False, ("hf_",)),
    "npm_token": (False, ("npm_",)), "pypi_token": (False, ("pypi-",)), "jwt": (False, ("eyJ",)), "bearer_token": (True, ("bearer",)),
    "url_credentials": (False, ("://",)),
    "password_assignment": (True, ("passw", "secret", "token", "key", "credential")),
}

# each plugin's literals, (case-insensitive, literal): every match of one of the plugin's regexes contains one of
# them (read off detect-secrets' own patterns; AWS's second pattern and Slack's are case-insensitive)
_PLUGIN_GUARDS: dict[str, tuple[tuple[bool, str], ...]] = {
    "AWSKeyDetector": ((False, "AKIA"), (False, "ASIA"), (False, "ABIA"), (False, "ACCA"), (False, "A3T"), (True, "aws")),
    "AzureStorageKeyDetector": ((False, "AccountKey="),), "BasicAuthDetector": ((False, "://"),),
    "DiscordBotTokenDetector": ((False, "."),),
    "GitHubTokenDetector": tuple((False, f"{p}_") for p in ("ghp", "gho", "ghu", "ghs", "ghr")),
    "GitLabTokenDetector": tuple((False, f"{p}-") for p in ("glpat", "gldt", "glft", "glsoat", "glrt", "glcbt", "glimt", "glptt",
                                                            "glagent", "gloas")) + ((False, "GR1348941"),),
    "JwtTokenDetector": ((False, "eyJ"),), "MailchimpDetector": ((False, "-us"),), "NpmDetector": ((False, "/:_authToken="),),
    "OpenAIDetector": ((False, "T3BlbkFJ"),), "PypiTokenDetector": ((False, "pypi-AgE"),), "SendGridDetector": ((False, "SG."),),
    "SlackDetector": ((True, "xox"), (True, "hooks.slack.com/services/")), "SquareOAuthDetector": ((False, "sq0csp-"),),
    "StripeDetector": ((False, "k_live_"),), "TelegramBotTokenDetector": ((False, ":"),),
    "TwilioKeyDetector": ((False, "AC"), (False, "SK")),
}
# the only non-ASCII characters that (?i) matches to an ASCII letter (İ ı ſ and the Kelvin sign; test pins them):
# a text holding one may match a case-insensitive pattern whose literal its lower-cased form lacks
_FOLD_CHARS = "\u0130\u0131\u017f\u212a"
_FOLDS = re.compile(f"[{_FOLD_CHARS}]")


def _has(text: str, lower: str, key: tuple[bool, str]) -> bool:
    """Whether guard literal ``key`` may occur in ``text`` (``lower``: its lower-cased form, for insensitive keys)."""
    if not key[0]:
        return key[1] in text
    return key[1] in lower or (not text.isascii() and _FOLDS.search(text) is not None)

# necessary conditions, searched once over a whole conversation, for plugins whose guard literal is in nearly every
# text: every match of the plugin's regex contains a match of these, and neither can span the newline that joins
# a conversation's texts (Telegram: \d{8,10}:[0-9A-Za-z_-]{35}; Discord: [MNO]X{23,25}\.X{6}\.X{27}, X=[a-zA-Z\d_-])
_PLUGIN_CORPUS_GUARDS: dict[str, re.Pattern[str]] = {
    "TelegramBotTokenDetector": re.compile(r":[0-9A-Za-z_-]{35}"),
    "DiscordBotTokenDetector": re.compile(r"\.[\w-]{6}\.[\w-]{27}"),
}


_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,24}(?![A-Za-z0-9-])")
_EMAIL_SKIP_DOMAINS = re.compile(r"(?i)(?:^|\.)(?:example\.(?:com|org|net)|[a-z0-9-]+\.(?:invalid|test|example|localhost))$")
_FILE_EXTENSIONS = {"png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "js", "ts", "tsx", "jsx", "mjs", "cjs", "json",
                    "css", "scss", "md", "py", "html", "txt", "yml", "yaml", "toml", "lock", "map", "wasm", "rs", "go"}

_HOME = re.compile(r"(?P<pre>/home/|/Users/|[A-Za-z]:(?:\\\\|\\|/)Users(?:\\\\|\\|/))(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,63})(?![A-Za-z0-9._-])")
_GENERIC_USERS = {"user", "username", "users", "me", "you", "shared", "public", "default", "runner", "ubuntu", "node",
                  "root", "admin", "guest", "app", "vscode", "codespace", "coder", "jovyan", "linuxbrew", "all", "your",
                  "yourname", "name", "example", "someone", "test", "dev", "work"}
_PLACEHOLDER_USER = re.compile(r"^user\d+$")

# --- high-entropy strings ------------------------------------------------------------------------------------------
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_.-])(?P<v>[A-Za-z0-9+/_-]{24,}={0,2})(?![A-Za-z0-9+/=_-])")
_HASH_PREFIX = re.compile(r"(?i)(?:sha(?:1|224|256|384|512)[-:=]|md5[-:=]|integrity|checksum|digest|hash)[\"'\s:=]*$")


# the characters of _TOKEN's lookbehind class: every match is made of them and sits inside a maximal run of them
_RUN_CHARS = np.zeros(128, dtype=bool)
_RUN_CHARS[[ord(c) for c in string.ascii_letters + string.digits + "+/=_.-"]] = True


_MIN_SWITCHES = math.ceil(0.35 * 24)  # _is_high_entropy_secret's class switches for the shortest body it accepts


def _token_starts(corpus: str, raw: bytes | None = None) -> list[int]:
    """Where ``_TOKEN`` matches that can pass ``_is_high_entropy_secret`` start: at the starts of the maximal runs of
    ``_RUN_CHARS`` at least 24 long that hold two upper-case letters, two lower-case letters and two digits and
    switch character class at least ``_MIN_SWITCHES`` times. A match (24+ token characters, then up to two ``=``)
    is made of run characters and its lookbehind refuses any position preceded by one, so it starts at the start of
    such a run and lies inside it; its body counts no more letters, digits or switches than the run. Skipping the
    other runs changes no finding: matches of different runs never overlap. One compiled pass over the corpus's
    UTF-8 (``raw``, when the caller has it; run characters are ASCII, so its runs are the text's) instead of a regex
    attempt at every position and a Python check of every long run."""
    from harnessfit.dataset import kernels

    if raw is None:
        raw = corpus.encode("utf-8", "surrogatepass")
    utf8 = np.frombuffer(raw, dtype=np.uint8)
    starts = kernels.entropy_runs(utf8, _RUN_CHARS, 24, _MIN_SWITCHES)
    if len(raw) != len(corpus) and len(starts):
        starts = kernels.char_offsets(utf8, starts)
    return starts.tolist()


_EMAIL_LOCAL_TAIL = re.compile(r"[A-Za-z0-9._%+-]{1,65}\Z")


def _email_starts(corpus: str) -> Iterator[int]:
    """Where ``_EMAIL`` matches can start: for each ``@``, the start of the run of local-part characters just
    before it when that run is 1-64 long (the lookbehind refuses a start inside the run, and the local part holds
    no ``@``)."""
    at = corpus.find("@")
    while at >= 0:
        m = _EMAIL_LOCAL_TAIL.search(corpus, max(0, at - 65), at)  # endpos=at: \Z is the ``@``
        if m is not None and at - m.start() <= 64:
            yield m.start()
        at = corpus.find("@", at + 1)


_HOME_LITERALS = ("/home/", "Users")


def _home_starts(corpus: str, occ: dict[tuple[bool, str], list[int] | None]) -> list[int]:
    """Where ``_HOME`` matches can start: at ``/home/`` or ``/Users/``, or at the drive letter 3 or 4 characters
    before ``Users`` (a drive prefix is a letter, a colon and one or two separator characters), ascending
    (``occ``: the offsets of ``_HOME_LITERALS``, from ``Redactor._occurrences``)."""
    users = occ.get((False, "Users")) or []
    out = list(occ.get((False, "/home/")) or [])
    out += [k - 1 for k in users if k and corpus.startswith("/Users/", k - 1)]
    out += [k - d for k in users for d in (3, 4) if k >= d]
    return sorted(set(out))


def _entropy(s: str) -> float:
    counts = Counter(s)
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _is_high_entropy_secret(token: str, text: str, start: int) -> bool:
    body = token.rstrip("=")
    if not (24 <= len(body) <= 128):
        return False
    if re.fullmatch(r"[0-9a-fA-F-]+", body):  # git SHAs, sha256 hex, UUIDs
        return False
    if "/" in body and re.search(r"[A-Za-z]{3,}/[A-Za-z]{3,}", body):  # paths and URLs
        return False
    upper = sum(ch.isupper() for ch in body)
    lower = sum(ch.islower() for ch in body)
    digits = sum(ch.isdigit() for ch in body)
    if upper < 2 or lower < 2 or digits < 2:
        return False
    if _entropy(body) < 4.2:
        return False
    # random strings switch character class (lower/upper/digit/other) often; camelCase identifiers rarely
    cls = [0 if ch.islower() else 1 if ch.isupper() else 2 if ch.isdigit() else 3 for ch in body]
    if sum(a != b for a, b in zip(cls, cls[1:])) < 0.35 * len(body):
        return False
    if _HASH_PREFIX.search(text[max(0, start - 24):start]):
        return False
    # a line of a wrapped base64 blob (MIME, PEM certificate, data files): the whole line is one long token and a
    # neighbouring line is one too
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    if text[line_start:line_end].strip() == token and len(token) >= 60:
        prev_line = text[text.rfind("\n", 0, max(0, line_start - 1)) + 1:max(0, line_start - 1)].strip()
        nxt_end = text.find("\n", line_end + 1)
        next_line = text[line_end + 1:(len(text) if nxt_end < 0 else nxt_end)].strip()
        if any(len(x) >= 40 and re.fullmatch(r"[A-Za-z0-9+/=]+", x) for x in (prev_line, next_line)):
            return False
    return True


def _bad_value(value: str) -> bool:
    """Values that look like templates, references or existing placeholders: never secrets."""
    if len(value) < _SECRET_MIN_LEN or "REDACTED_" in value:
        return True
    low = value.lower()
    if re.fullmatch(r"[a-z_.\-]+", value) or re.fullmatch(r"[A-Z_]+", value):
        return True  # identifiers and env-var names
    if any(t in low for t in ("${", "{{", "%(", "process.env", "os.environ", "getenv", "xxxx", "****", "your_", "your-",
                              "<", "example", "placeholder", "dummy", "changeme", "redacted")):
        return True
    return False


def _detect_secrets_plugins() -> list[Any]:
    """Token-shape plugins of detect-secrets (its regex detectors; keyword/entropy/IP ones are ours, tuned for code)."""
    from detect_secrets.plugins import (aws, azure_storage_key, basic_auth, discord, github_token, gitlab_token, jwt,
                                        mailchimp, npm, openai, pypi_token, sendgrid, slack, square_oauth, stripe,
                                        telegram_token, twilio)

    classes = [aws.AWSKeyDetector, azure_storage_key.AzureStorageKeyDetector, basic_auth.BasicAuthDetector,
               discord.DiscordBotTokenDetector, github_token.GitHubTokenDetector, gitlab_token.GitLabTokenDetector,
               jwt.JwtTokenDetector, mailchimp.MailchimpDetector, npm.NpmDetector, openai.OpenAIDetector,
               pypi_token.PypiTokenDetector, sendgrid.SendGridDetector, slack.SlackDetector,
               square_oauth.SquareOAuthDetector, stripe.StripeDetector, telegram_token.TelegramBotTokenDetector,
               twilio.TwilioKeyDetector]
    return [cls() for cls in classes]


def _slug(secret_type: str) -> str:
    return "ds_" + re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")


# texts at least this long have their findings remembered across conversations, up to these bounds
_CACHE_MIN_CHARS = 256
_CACHE_MAX_TEXTS = 8192
_CACHE_MAX_CHARS = 32 * 2**20

class _Plan(NamedTuple):
    """Detectors that can fire in one conversation (see ``Redactor._plan``)."""

    shapes: list[tuple[str, re.Pattern[str], bool, tuple[str, ...] | None]]  # kind, pattern, case-insensitive, literals
    plugins: list[tuple[Any, str, tuple[tuple[bool, str], ...] | None]]  # plugin, kind, guard keys (None: no guard)
    email: bool
    high_entropy: bool
    home: bool


class RedactionResult:
    """One redacted conversation and what was found in it (``found``: distinct values per kind,
    ``replaced``: occurrences replaced)."""

    __slots__ = ("conversation", "found", "replaced")

    def __init__(self, conversation: Conversation, found: Counter[str], replaced: Counter[str]) -> None:
        self.conversation = conversation
        self.found = found
        self.replaced = replaced


class Redactor:
    """Finds secrets, e-mails and home-folder user names in a conversation and replaces them consistently.

    ``kinds`` limits what is redacted (``None`` = everything); kinds are the names in ``KINDS`` plus ``email``,
    ``home_user``, ``high_entropy`` and ``ds_*`` (detect-secrets plugin types).
    """

    KINDS = sorted({k for k, _ in _SHAPES} | {"email", "home_user", "high_entropy", "detect_secrets"})

    def __init__(self, kinds: list[str] | None = None, *, high_entropy: bool = True, detect_secrets: bool = True,
                 keep: list[str] | None = None) -> None:
        self.kinds = set(kinds) if kinds else None
        kept = sorted({k for k in keep or () if k}, key=lambda k: (-len(k), k))
        self._kept = kept
        self._seen: OrderedDict[str, list[tuple[str, str]]] = OrderedDict()  # text -> its findings (see _scan_cached)
        self._seen_chars = 0
        self._keep = re.compile("(" + "|".join(re.escape(k) for k in kept) + ")") if kept else None
        self._shapes = [(k, _FAST_FORMS.get(k, p)) for k, p in _SHAPES if self._on(k)]
        self._plugins = _detect_secrets_plugins() if detect_secrets and self._on("detect_secrets") else []
        self._plugin_guards = [(p, _slug(p.secret_type), _PLUGIN_GUARDS.get(type(p).__name__),
                                _PLUGIN_CORPUS_GUARDS.get(type(p).__name__)) for p in self._plugins]
        keys = {(g[0], lit) for k, _ in self._shapes if (g := _GUARDS.get(k)) is not None for lit in g[1]}
        keys |= {key for _, _, g, _ in self._plugin_guards if g is not None for key in g}
        self._literal_keys = sorted(keys, key=lambda k: (len(k[1]), k))
        # detectors by number (shapes first, then plugins): which guard literals let each run, and the unguarded
        self._guarding: dict[tuple[bool, str], list[int]] = {}
        self._unguarded: set[int] = set()
        guards = [tuple((g[0], lit) for lit in g[1]) if (g := _GUARDS.get(k)) is not None else None
                  for k, _ in self._shapes]
        guards += [g for _, _, g, _ in self._plugin_guards]
        for d, keys in enumerate(guards):
            if keys is None:
                self._unguarded.add(d)
            for key in keys or ():
                self._guarding.setdefault(key, []).append(d)
        # one Aho-Corasick automaton (a DFA over UTF-8 bytes) per case: every occurrence of every guard literal in
        # one linear pass; the home-folder prefixes ride along in the case-sensitive one (their offsets are where
        # ``_HOME`` can match); single characters, e.g. Discord's ".", would match everywhere: tested with ``in``
        self._high_entropy = high_entropy and self._on("high_entropy")
        self._email = self._on("email")
        self._home = self._on("home_user")
        self._automata = []
        for insensitive in (False, True):
            lits = [k[1] for k in self._literal_keys if k[0] is insensitive and len(k[1]) > 1]
            if not insensitive and self._home:
                lits += [h for h in _HOME_LITERALS if h not in lits]
            self._automata.append((insensitive, lits, ahocorasick_rs.BytesAhoCorasick(
                [lit.encode() for lit in lits], implementation=ahocorasick_rs.Implementation.DFA) if lits else None))
        self._single = [k for k in self._literal_keys if len(k[1]) == 1]

    def _on(self, kind: str) -> bool:
        return self.kinds is None or kind in self.kinds

    # -- detection ------------------------------------------------------------------------------------------------
    def _plan(self, corpus: str, occurrences: dict[tuple[bool, str], list[int] | None] | None = None,
              raw: bytes | None = None) -> _Plan:
        """The detectors whose guard literals occur somewhere in ``corpus`` (a text, or all texts of a conversation
        joined by newlines), each with only those literals (``occurrences``: ``_occurrences(corpus)`` when the
        caller has it). A guard literal absent from the corpus is absent from every text in it, so checking texts
        against the plan gives exactly the per-text guards' verdicts, with one automaton pass per conversation
        instead of one search per text and literal. ``raw``: the corpus as UTF-8, when the caller has it (the
        Telegram and Discord corpus guards are then checked in one compiled pass)."""
        occ = self._occurrences(corpus) if occurrences is None else occurrences  # holds exactly the present keys
        compiled: tuple[bool, bool] | None = None
        present: dict[int, list[tuple[bool, str]]] = {}  # detector -> its guard literals that occur
        for key in occ:
            for d in self._guarding.get(key, ()):
                present.setdefault(d, []).append(key)
        shapes = []
        plugins = []
        for d in sorted(present.keys() | self._unguarded):
            keys = present.get(d)
            if d < len(self._shapes):
                kind, pat = self._shapes[d]
                guard = _GUARDS.get(kind)
                shapes.append((kind, pat, False, None) if guard is None else (kind, pat, guard[0], tuple(k[1] for k in keys)))
                continue
            plugin, slug, guard, corpus_guard = self._plugin_guards[d - len(self._shapes)]
            if guard is None:
                plugins.append((plugin, slug, None))
            elif corpus_guard is None:
                plugins.append((plugin, slug, tuple(keys)))
            else:
                if raw is not None and compiled is None:
                    from harnessfit.dataset import kernels

                    compiled = kernels.dot_colon_guards(np.frombuffer(raw, dtype=np.uint8))
                if (corpus_guard.search(corpus) is not None if compiled is None
                        else compiled[corpus_guard is _PLUGIN_CORPUS_GUARDS["DiscordBotTokenDetector"]]):
                    plugins.append((plugin, slug, tuple(keys)))
        return _Plan(shapes, plugins, self._email and "@" in corpus, self._high_entropy,
                     self._home and any((False, h) in occ for h in _HOME_LITERALS))

    def _occurrences(self, corpus: str, raw: bytes | None = None) -> dict[tuple[bool, str], list[int] | None]:
        """Where each guard literal may occur in ``corpus`` (key: (case-insensitive, literal)), as start offsets,
        for the literals that occur. Case-insensitive literals are found in the lower-cased corpus; a corpus holding
        folding characters adds their offsets to every one of them (``_has``'s rule); ``None`` = somewhere (the
        single-character literals, tested with ``in``)."""
        out: dict[tuple[bool, str], list[int] | None] = {}
        # searched as UTF-8 bytes by DFAs; case-insensitive literals (ASCII) in the bytes' ASCII-lower-cased form:
        # the non-ASCII letters that lower-case or fold to an ASCII one are the folding characters of the rule
        if raw is None:
            raw = corpus.encode("utf-8", "surrogatepass")
        low = raw.lower()
        for insensitive, lits, automaton in self._automata:
            if automaton is not None:
                for n, start, _ in automaton.find_matches_as_indexes(low if insensitive else raw, overlapping=True):
                    out.setdefault((insensitive, lits[n]), []).append(start)
        folds: list[int] = []
        if len(raw) != len(corpus):
            if out:  # byte offsets -> character offsets
                from harnessfit.dataset import kernels

                flat = np.fromiter((at for offs in out.values() for at in offs), dtype=np.int64)  # type: ignore[union-attr]
                order = np.argsort(flat, kind="stable")
                chars = np.empty_like(flat)
                chars[order] = kernels.char_offsets(np.frombuffer(raw, dtype=np.uint8), flat[order])
                at = 0
                for k, offs in out.items():
                    out[k] = chars[at:at + len(offs)].tolist()  # type: ignore[arg-type]
                    at += len(offs)  # type: ignore[arg-type]
            if any(ch in corpus for ch in _FOLD_CHARS):
                folds = [m.start() for m in _FOLDS.finditer(corpus)]
                for insensitive, lits, _ in self._automata:
                    if insensitive:
                        for lit in lits:
                            out[True, lit] = sorted((out.get((True, lit)) or []) + folds)
        for key in self._single:
            if key[1].encode() in (low if key[0] else raw) or (key[0] and folds):
                out[key] = None
        return out

    def findings(self, text: str) -> list[tuple[str, str]]:
        """Everything one text holds, as (kind, value): detector findings in detector order then position, then
        home-folder user names (kind ``home_user``)."""
        return self._scan([text])[0] if text else []

    def find(self, text: str) -> Iterator[tuple[str, str]]:
        """(kind, value) pairs found in one text, in order of detectors then position (no user names)."""
        return iter([pair for pair in self.findings(text) if pair[0] != "home_user"])

    def _scan(self, texts: list[str]) -> list[list[tuple[str, str]]]:
        """For each of ``texts``, everything it holds (see ``findings``), with guards decided once over all of them:
        a detector whose guard literals occur in none of the texts is skipped, the others run on the texts that
        hold one of their literals (a literal is a necessary condition of its detector's matches). E-mail, high-entropy and home-folder patterns run once over
        the texts joined by newlines instead of once per text: a match is mapped back to its text by offset,
        none of these patterns can hold a newline (a crossing match would be seen and that pattern re-run text
        by text), and their lookarounds treat the joining newline as a text edge, so the result is exactly the
        per-text one."""
        corpus = "\n".join(texts)
        raw = corpus.encode("utf-8", "surrogatepass")
        occ = self._occurrences(corpus, raw)
        plan = self._plan(corpus, occ, raw)
        starts: list[int] = []
        at = 0
        for t in texts:
            starts.append(at)
            at += len(t) + 1
        out: list[list[tuple[str, str]]] = [[] for _ in texts]
        holders: dict[tuple[bool, str], set[int]] = {}

        def holding(key: tuple[bool, str]) -> set[int]:
            """Indices of the texts ``_has`` says may hold guard literal ``key`` (a literal holds no newline, so
            each occurrence lies inside one text)."""
            got = holders.get(key)
            if got is None:
                offsets = occ.get(key, [])
                if offsets is None:
                    got = {i for i, t in enumerate(texts) if _has(t, t.lower() if key[0] else "", key)}
                else:
                    got = {bisect_right(starts, at) - 1 for at in offsets}
                holders[key] = got
            return got

        def guarded(lits: tuple[tuple[bool, str], ...] | None) -> Iterator[tuple[int, str]]:
            """The texts that hold one of the guard literals, in order; all when unguarded."""
            if lits is None:
                yield from enumerate(texts)
                return
            for i in sorted(set().union(*(holding(key) for key in lits))):
                yield i, texts[i]

        def anchored(pat: re.Pattern[str], anchors: Iterable[int]) -> Iterator[re.Match[str]]:
            """``pat.finditer(corpus)`` when every position a match can start at is in ``anchors`` (ascending): one
            anchored attempt per anchor, skipping anchors inside the previous match as ``finditer`` does."""
            end = 0
            for a in anchors:
                if a >= end and (m := pat.match(corpus, a)) is not None:
                    end = m.end()
                    yield m

        def hits(pat: re.Pattern[str], anchors: Iterable[int] | None = None) -> list[tuple[int, str, int, re.Match[str]]]:
            """(text index, text, start within it, match) for every match of ``pat``, in text order (``anchors``:
            see ``anchored``)."""
            found = []
            for m in pat.finditer(corpus) if anchors is None else anchored(pat, anchors):
                i = bisect_right(starts, m.start()) - 1
                if m.end() > starts[i] + len(texts[i]):  # crossed the joining newline: scan text by text
                    return [(k, t, m.start(), m) for k, t in enumerate(texts) for m in pat.finditer(t)]
                found.append((i, texts[i], m.start() - starts[i], m))
            return found

        for kind, pat, insensitive, lits in plan.shapes:
            if pat is _PW_QUOTED and (anchors := _pw_quoted_starts(corpus, occ)) is not None:
                for i, _, _, m in hits(pat, anchors):
                    if not _bad_value(v := m.group("v")):
                        out[i].append((kind, v))
                continue
            for i, text in guarded(None if lits is None else tuple((insensitive, g) for g in lits)):
                for m in _matches(pat, text):
                    v = m.group("v") if "v" in pat.groupindex else m.group(0)
                    if v and (kind in ("private_key", "aws_access_key") or not _bad_value(v)):
                        out[i].append((kind, v))
        for plugin, slug, lits in plan.plugins:
            for i, text in guarded(lits):
                for v in plugin.analyze_string(text):
                    if isinstance(v, str) and not _bad_value(v):
                        out[i].append((slug, v))
        if plan.email:
            for i, _, _, m in hits(_EMAIL, _email_starts(corpus)):
                v = m.group(0)
                local_part, _, domain = v.rpartition("@")
                if local_part.lower() == "git" or _EMAIL_SKIP_DOMAINS.search(domain):
                    continue
                if domain.rsplit(".", 1)[-1].lower() in _FILE_EXTENSIONS:
                    continue
                out[i].append(("email", v))
        if plan.high_entropy:
            for i, text, start, m in hits(_TOKEN, _token_starts(corpus, raw)):
                if _is_high_entropy_secret(m.group("v"), text, start):
                    out[i].append(("high_entropy", m.group("v")))
        if plan.home:
            for i, _, _, m in hits(_HOME, _home_starts(corpus, occ)):
                name = m.group("name")
                if name.lower() not in _GENERIC_USERS and not _PLACEHOLDER_USER.match(name):
                    out[i].append(("home_user", name))
        return out

    def find_users(self, text: str) -> Iterator[str]:
        """User names in home-folder paths of one text (``/home/<name>``, ``/Users/<name>``, ``C:\\Users\\<name>``)."""
        return iter([value for kind, value in self.findings(text) if kind == "home_user"])

    # -- redaction ------------------------------------------------------------------------------------------------
    def _scan_cached(self, texts: list[str]) -> list[list[tuple[str, str]]]:
        """``_scan``, with the findings of long texts remembered across conversations (what a text holds depends on
        the text alone): the system prompt, a file read in many sessions, a repeated command output are scanned
        once. The memory is bounded (oldest first out) and changes speed only, never a result."""
        out: list[list[tuple[str, str]] | None] = [self._seen.get(t) if len(t) >= _CACHE_MIN_CHARS else None for t in texts]
        todo = [i for i, r in enumerate(out) if r is None]
        if todo:
            for i, found in zip(todo, self._scan([texts[i] for i in todo])):
                out[i] = found
                text = texts[i]
                if len(text) >= _CACHE_MIN_CHARS:
                    self._seen[text] = found
                    self._seen_chars += len(text)
                    while len(self._seen) > _CACHE_MAX_TEXTS or self._seen_chars > _CACHE_MAX_CHARS:
                        oldest, _ = self._seen.popitem(last=False)  # O(1); next(iter(dict)) rescans freed slots
                        self._seen_chars -= len(oldest)
        return out  # type: ignore[return-value]

    def redact(self, conv: Conversation) -> RedactionResult:
        """Return a redacted copy (or the same object when nothing was found) plus counts per kind."""
        # a repeated text (a file read twice, the same command output) can only find values already mapped: scan each
        # distinct text once, in order of first appearance
        texts = [t for t in dict.fromkeys(_iter_texts(conv)) if t]
        if self._keep is not None:  # the texts that hold a kept string are looked at only around it
            holders = {i for i, text in enumerate(texts) for k in self._kept if k in text}
            if holders:
                texts = list(dict.fromkeys(piece for i, text in enumerate(texts)
                                           for piece in (self._keep.split(text)[0::2] if i in holders else (text,))
                                           if piece))
        per_text = self._scan_cached(texts)
        secrets: dict[str, str] = {}  # value -> placeholder
        users: dict[str, str] = {}  # name -> placeholder name
        per_kind: Counter[str] = Counter()
        found: Counter[str] = Counter()
        for kind, value in (pair for pairs in per_text for pair in pairs):
            if kind == "home_user":
                if value not in users:
                    users[value] = f"user{len(users) + 1}"
                    found["home_user"] += 1
                continue
            if value in secrets or any(value in s for s in secrets):
                continue
            per_kind[kind] += 1
            found[kind] += 1
            if kind == "email":
                secrets[value] = f"email{per_kind[kind]}@redacted.invalid"
            else:
                secrets[value] = f"REDACTED_{kind.upper()}_{per_kind[kind]}"
        replaced: Counter[str] = Counter()
        if not secrets and not users:
            return RedactionResult(conv, found, replaced)
        sub = _make_substituter(secrets, users, replaced, self._keep, self._kept)
        data = conv.model_dump()
        needles = [*secrets, *users]
        plain = not any(c in _JSON_ESCAPED for n in needles for c in n)
        data["messages"] = [_redact_message(m, sub, needles, plain) for m in data["messages"]]
        data["meta"]["cwd"] = sub(data["meta"]["cwd"])
        return RedactionResult(Conversation.model_validate(data), found, _kinds_of(replaced))


def _kinds_of(replaced: Counter[str]) -> Counter[str]:
    out: Counter[str] = Counter()
    for placeholder, n in replaced.items():
        if placeholder.startswith("user") and "@" not in placeholder:
            out["home_user"] += n
        elif placeholder.startswith("email"):
            out["email"] += n
        else:
            out[placeholder[len("REDACTED_"):].rsplit("_", 1)[0].lower()] += n
    return out


def _make_substituter(secrets: dict[str, str], users: dict[str, str], replaced: Counter[str],
                      keep: re.Pattern[str] | None = None, kept: list[str] | None = None) -> Callable[[str | None], str | None]:
    """``sub(text)``: ``text`` with every secret value and home-folder user name replaced (counted in ``replaced``),
    leaving the ``kept`` strings (which ``keep`` matches) as they are."""
    pat = None
    if secrets:
        alts = sorted(secrets, key=lambda s: (-len(s), s))
        pat = re.compile("|".join(re.escape(a) for a in alts))
    user_pat = None
    if users:
        names = "|".join(re.escape(n) for n in sorted(users, key=lambda s: (-len(s), s)))
        user_pat = re.compile(
            r"(?P<pre>/home/|/Users/|[A-Za-z]:(?:\\\\|\\|/)Users(?:\\\\|\\|/)|-home-|-Users-)(?P<name>" + names + r")(?![A-Za-z0-9._])")

    def one(m: re.Match[str]) -> str:
        ph = secrets[m.group(0)]
        replaced[ph] += 1
        return ph

    def one_user(m: re.Match[str]) -> str:
        ph = users[m.group("name")]
        replaced[ph] += 1
        return m.group("pre") + ph

    few = sorted(secrets) if len(secrets) <= 16 else None  # a substring test per value beats a long alternation

    def sub_piece(text: str) -> str:
        if pat is not None and (few is None or any(v in text for v in few)):
            text = pat.sub(one, text)
        if user_pat is not None and any(name in text for name in users):
            text = user_pat.sub(one_user, text)
        return text

    needles = [*secrets, *users] if len(secrets) + len(users) <= 16 else None  # each replacement holds one

    def sub(text: str | None) -> str | None:
        if not text or (needles is not None and not any(n in text for n in needles)):
            return text
        if keep is None or not any(k in text for k in kept or ()):
            return sub_piece(text)
        parts = keep.split(text)  # odd indices are the kept strings themselves
        return "".join(p if i % 2 else sub_piece(p) for i, p in enumerate(parts))

    return sub


def _iter_texts(conv: Conversation) -> list[str]:
    """Every string of ``conv`` redaction looks at, in order: the working folder, message texts, and each string
    value inside tool-call arguments (the arguments themselves when they are not JSON)."""
    out = [conv.meta.cwd]
    add = out.append
    for msg in conv.messages:
        content = msg.get("content")
        if isinstance(content, str):
            add(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(text := part.get("text"), str):
                    add(text)
        for tc in msg.get("tool_calls") or ():
            args = (tc.get("function") or {}).get("arguments")
            if isinstance(args, str):
                try:
                    _strings_into(orjson.loads(args), add)
                except orjson.JSONDecodeError:
                    add(args)
            elif args is not None:
                _strings_into(args, add)
    return out


def _strings_into(value: Any, add: Callable[[str], None]) -> None:
    if isinstance(value, str):
        add(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings_into(v, add)
    elif isinstance(value, list):
        for v in value:
            _strings_into(v, add)


def redact_text_values(value: Any, sub: Callable[[str], str]) -> Any:
    """Apply ``sub`` to every string value inside a JSON-like value (keys untouched, order kept)."""
    if isinstance(value, str):
        return sub(value)
    if isinstance(value, dict):
        return {k: redact_text_values(v, sub) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_text_values(v, sub) for v in value]
    return value


def _redact_message(msg: dict[str, Any], sub: Callable[[str], str], needles: list[str], plain: bool) -> dict[str, Any]:
    """``msg`` with ``sub`` applied to every text and argument string (``msg`` itself when nothing changes);
    ``needles``: the secret values and user names, one of which a string must hold to change; ``plain``: no needle
    holds a character JSON writes only as an escape. Then a string inside JSON arguments that have no ``\\u`` or
    ``\\/`` escape holds a needle only if the arguments hold it verbatim, and needle-free arguments are left as they
    are without parsing."""
    out = msg
    content = msg.get("content")
    if isinstance(content, str):
        if (new := sub(content)) != content:
            out = {**msg, "content": new}
    elif isinstance(content, list):
        parts = [{**part, "text": sub(part["text"])} if isinstance(part, dict) and isinstance(part.get("text"), str)
                 else part for part in content]
        if parts != content:
            out = {**msg, "content": parts}
    calls = msg.get("tool_calls")
    if calls:
        new_calls = list(calls)
        changed = False
        for i, tc in enumerate(calls):
            fn = tc.get("function") or {}
            args = fn.get("arguments")
            if (isinstance(args, str) and plain and "\\u" not in args and "\\/" not in args
                    and not any(n in args for n in needles)):
                new_args = args
            elif isinstance(args, str):
                try:
                    parsed = orjson.loads(args)
                except orjson.JSONDecodeError:
                    new_args = sub(args)
                else:
                    red = redact_text_values(parsed, sub)
                    new_args = args if red == parsed else orjson.dumps(red).decode("utf-8")
            else:
                new_args = redact_text_values(args, sub)
            if new_args is args and "function" in tc and "arguments" in fn:
                continue
            new_calls[i] = {**tc, "function": {**fn, "arguments": new_args}}
            changed = True
        if changed:
            out = {**out, "tool_calls": new_calls}
    return out