"""From findings to a redacted conversation: one placeholder per distinct value (numbered per kind by first
appearance), each placeholder's kind kept beside it, and the value → placeholder map applied to every string of the
conversation. Tool-call ``arguments`` are parsed, redacted value by value and re-serialised compactly (they stay
valid JSON); untouched arguments keep their exact bytes.

A string may itself be JSON text (a config the agent writes, a JSON API response it reads): its string values are
scanned decoded too, so a line-anchored rule sees the lines of a YAML or ``.env`` text inside it, and each value is
replaced in its written form as well as in its JSON-escaped form (a private key's newlines are ``\n`` there).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "Placeholders",
    "assign_placeholders",
    "make_substituter",
    "redact_message",
    "iter_texts",
    "redact_text_values",
]

_JSON_ESCAPED = frozenset('"\\' + "".join(map(chr, range(32))))  # characters JSON writes only as escapes


@dataclass
class Placeholders:
    """``secrets``: value -> placeholder; ``users``: user name -> placeholder name (replaced only inside home-folder
    paths); ``kinds``: placeholder -> the kind of what it replaces; ``found``: distinct values per kind."""

    secrets: dict[str, str] = field(default_factory=dict)
    users: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    found: Counter[str] = field(default_factory=Counter)

    def __bool__(self) -> bool:
        return bool(self.secrets or self.users)


def assign_placeholders(findings: Iterable[tuple[str, str]], styles: dict[str, str]) -> Placeholders:
    """Placeholders for ``findings`` (kind, value) in order; ``styles``: kind -> ``secret``/``email``/``user`` (see
    ``Rule.placeholder``). A value inside one already mapped is skipped: replacing the longer one removes it."""
    ph = Placeholders()
    per_kind: Counter[str] = Counter()
    for kind, value in findings:
        style = styles.get(kind, "secret")
        if style == "user":
            if value not in ph.users:
                ph.users[value] = name = f"user{len(ph.users) + 1}"
                ph.kinds[name] = kind
                ph.found[kind] += 1
            continue
        if value in ph.secrets or any(value in s for s in ph.secrets):
            continue
        per_kind[kind] += 1
        ph.found[kind] += 1
        n = per_kind[kind]
        ph.secrets[value] = placeholder = (
            f"email{n}@redacted.invalid" if style == "email" else f"REDACTED_{kind.upper()}_{n}"
        )
        ph.kinds[placeholder] = kind
    return ph


def make_substituter(
    ph: Placeholders, replaced: Counter[str], keep: re.Pattern[str] | None = None, kept: list[str] | None = None
) -> Callable[[str | None], str | None]:
    """``sub(text)``: ``text`` with every secret value and home-folder user name replaced (counted per kind in
    ``replaced``), leaving the ``kept`` strings (which ``keep`` matches) as they are."""
    secrets, users = dict(ph.secrets), ph.users
    for value, placeholder in ph.secrets.items():  # the value as JSON text inside a string writes it
        if any(c in _JSON_ESCAPED for c in value):
            secrets.setdefault(orjson.dumps(value).decode("utf-8")[1:-1], placeholder)
    pat = re.compile("|".join(re.escape(a) for a in sorted(secrets, key=lambda s: (-len(s), s)))) if secrets else None
    user_pat = None
    if users:
        names = "|".join(re.escape(n) for n in sorted(users, key=lambda s: (-len(s), s)))
        user_pat = re.compile(
            r"(?P<pre>/home/|/Users/|[A-Za-z]:(?:\\\\|\\|/)Users(?:\\\\|\\|/)|-home-|-Users-)(?P<name>"
            + names
            + r")(?![A-Za-z0-9._])"
        )

    def one(m: re.Match[str]) -> str:
        placeholder = secrets[m.group(0)]
        replaced[ph.kinds[placeholder]] += 1
        return placeholder

    def one_user(m: re.Match[str]) -> str:
        name = users[m.group("name")]
        replaced[ph.kinds[name]] += 1
        return m.group("pre") + name

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


def plain_needles(ph: Placeholders) -> tuple[list[str], bool]:
    """The values a string must hold to change, and whether none holds a character JSON writes only as an escape
    (see ``redact_message``)."""
    needles = [*ph.secrets, *ph.users]
    return needles, not any(c in _JSON_ESCAPED for n in needles for c in n)


def iter_texts(conv: Any) -> list[str]:
    """Every string of ``conv`` redaction looks at, in order: the working folder, message texts, each string value
    inside tool-call arguments (the arguments themselves when they are not JSON), and last the source file's path
    (``meta.file``: a session folder may be named after the working folder, user name included)."""
    out = [conv.meta.cwd]

    def add(text: str) -> None:
        out.append(text)
        _json_inside(text, out.append)

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
    add(conv.meta.file)
    return out


def _json_inside(text: str, add: Callable[[str], None], depth: int = 3) -> None:
    """The string values of ``text`` when it is a JSON object or array (and of JSON text inside those, ``depth``
    levels down)."""
    head = text.lstrip()[:1]
    if depth == 0 or head not in ("{", "[") or text.rstrip()[-1:] not in ("}", "]"):
        return
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return
    inner: list[str] = []
    _strings_into(value, inner.append)
    for s in inner:
        add(s)
        _json_inside(s, add, depth - 1)


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


def redact_message(msg: dict[str, Any], sub: Callable[[str], str], needles: list[str], plain: bool) -> dict[str, Any]:
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
        parts = [
            {**part, "text": sub(part["text"])}
            if isinstance(part, dict) and isinstance(part.get("text"), str)
            else part
            for part in content
        ]
        if parts != content:
            out = {**msg, "content": parts}
    calls = msg.get("tool_calls")
    if calls:
        new_calls = list(calls)
        changed = False
        for i, tc in enumerate(calls):
            fn = tc.get("function") or {}
            args = fn.get("arguments")
            if (
                isinstance(args, str)
                and plain
                and "\\u" not in args
                and "\\/" not in args
                and not any(n in args for n in needles)
            ):
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
