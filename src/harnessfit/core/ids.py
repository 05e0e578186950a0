"""Content-derived ids: the same input always gives the same id, whatever machine or worker count."""

from __future__ import annotations

import hashlib

__all__ = ["content_id", "root_request_id", "normalise_prompt", "SESSION_NOTE", "SUBAGENT_OF_NOTE", "session_links"]

SESSION_NOTE = "session:"
"""Transformation note ``session:<format>:<id>``: the source session this conversation comes from, noted where a
sub-agent run in another file may name it as its parent."""
SUBAGENT_OF_NOTE = "subagent_of:"
"""Transformation note ``subagent_of:<format>:<id>``: a sub-agent's run, spawned by that session. Its root request is
its own prompt; the grouped split puts it in its parent's split (``dataset.split``)."""


def content_id(*parts: str, length: int = 16) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:length]


def normalise_prompt(text: str) -> str:
    """Lower-case, collapse whitespace: two runs of the same request group together. (``str.split`` splits at
    exactly the characters regex ``\\s`` matches, ``str.isspace``; ``tests/core`` holds it equal to
    ``re.sub(r"\\s+", " ", text).strip()``.)"""
    return " ".join((text or "").split()).lower()


def root_request_id(first_prompt: str, repository: str | None) -> str:
    return content_id("root", normalise_prompt(first_prompt), repository or "")


def session_links(transformations: list[str]) -> tuple[str | None, str | None]:
    """(the session a conversation's notes name as its own, the session that spawned it), each ``None`` if none."""
    own = parent = None
    for t in transformations:
        if own is None and t.startswith(SESSION_NOTE):
            own = t[len(SESSION_NOTE) :]
        elif parent is None and t.startswith(SUBAGENT_OF_NOTE):
            parent = t[len(SUBAGENT_OF_NOTE) :]
    return own, parent
