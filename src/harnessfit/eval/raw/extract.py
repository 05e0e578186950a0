"""The code of a raw answer, and its output shape: the one documented extraction rule every raw checker uses.

Fenced code blocks are found as CommonMark defines them (a line ends at ``\n``, ``\r\n`` or ``\r``): an opening
fence is a line indented by at most three spaces, then at least three backticks or tildes, then an info string (its
first word is the block's language tag; after backticks it may not contain a backtick); the block closes at a line
indented by at most three spaces holding only at least as many of the same fence character; a block never closed
runs to the end of the answer.

**Extraction rule.** The code checked is the content of the first block whose language tag is one of the checker's
tags (compared case-insensitively); else the content of the first block; else, when the answer has no block at all,
the whole answer with surrounding whitespace removed (so bare code is still compiled, though its shape fails).

**Output shape** is clean when the answer is exactly one closed block, tagged with one of the checker's tags or not
tagged, with non-empty content and nothing but whitespace outside it. Each way to miss is one finding code:
``no_code_block``, ``several_code_blocks``, ``unterminated_block``, ``wrong_language_tag``, ``empty_block``,
``text_outside_block`` (any text, ``<think>`` reasoning included).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from harnessfit.eval.raw.findings import Check, Diagnostic

__all__ = ["EXTRACTION_RULE_VERSION", "Block", "Extraction", "find_blocks", "extract"]

EXTRACTION_RULE_VERSION = 1

_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language tag (first info word, lower-cased; "" when none), content, and where it lies."""

    tag: str
    content: str
    start_line: int  # 1-based line of the opening fence
    end_line: int  # 1-based line of the closing fence, or the last line when unclosed
    closed: bool


@dataclass(frozen=True)
class Extraction:
    """The code to check, where it came from, and the shape finding list (empty = shape clean)."""

    code: str
    source: Literal["tagged_block", "first_block", "whole_answer"]
    blocks: tuple[Block, ...]
    shape: Check


def find_blocks(text: str) -> list[Block]:
    """Every fenced block of ``text``, in order (see the module docstring for the fence rules)."""
    lines = _lines(text)
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m is None or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        fence = m["fence"]
        close = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        info = m["info"].strip()
        tag = info.split()[0].lower() if info else ""
        body: list[str] = []
        j = i + 1
        while j < len(lines) and close.match(lines[j]) is None:
            body.append(lines[j])
            j += 1
        closed = j < len(lines)
        blocks.append(
            Block(
                tag=tag,
                content="\n".join(body),
                start_line=i + 1,
                end_line=j + 1 if closed else len(lines),
                closed=closed,
            )
        )
        i = j + 1
    return blocks


def _lines(text: str) -> list[str]:
    """Lines as CommonMark counts them: ``\\n``, ``\\r\\n`` and ``\\r`` all end one."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _outside_text(text: str, blocks: Sequence[Block]) -> str:
    lines = _lines(text)
    inside: set[int] = set()
    for b in blocks:
        inside.update(range(b.start_line - 1, b.end_line))
    return "\n".join(line for k, line in enumerate(lines) if k not in inside).strip()


def extract(text: str, tags: Sequence[str]) -> Extraction:
    """Apply the extraction rule and the shape check for a checker accepting language ``tags``."""
    wanted = {t.lower() for t in tags}
    blocks = find_blocks(text)
    findings: list[Diagnostic] = []
    if not blocks:
        findings.append(Diagnostic(code="no_code_block", message="the answer has no fenced code block"))
        return Extraction(code=text.strip(), source="whole_answer", blocks=(), shape=Check.of(findings))
    chosen = next((b for b in blocks if b.tag in wanted), None)
    source: Literal["tagged_block", "first_block"] = "tagged_block" if chosen is not None else "first_block"
    chosen = chosen or blocks[0]
    if len(blocks) > 1:
        findings.append(Diagnostic(code="several_code_blocks", message=f"{len(blocks)} fenced code blocks, not one"))
    if not chosen.closed:
        findings.append(
            Diagnostic(code="unterminated_block", message="the code block is never closed", line=chosen.start_line)
        )
    if chosen.tag and chosen.tag not in wanted:
        findings.append(
            Diagnostic(
                code="wrong_language_tag",
                line=chosen.start_line,
                message=f"tagged {chosen.tag!r}, expected one of {', '.join(sorted(wanted))}",
            )
        )
    if not chosen.content.strip():
        findings.append(Diagnostic(code="empty_block", message="the code block is empty", line=chosen.start_line))
    outside = _outside_text(text, blocks)
    if outside:
        findings.append(
            Diagnostic(code="text_outside_block", message=f"{len(outside)} characters of text outside the code block")
        )
    return Extraction(code=chosen.content, source=source, blocks=tuple(blocks), shape=Check.of(findings))
