"""Content-derived ids: the same input always gives the same id, whatever machine or worker count."""

from __future__ import annotations

import hashlib
import re

__all__ = ["content_id", "root_request_id", "normalise_prompt"]


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
