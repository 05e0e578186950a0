"""The catalogue of Pi-authored tool-result texts: every wording each Pi release writes, and re-rendering one in
another release's words.

**What is Pi-authored.** A tool result holds what the environment gave (a file's text, a command's output) inside
text Pi itself writes: a tool's success line (``Successfully wrote …``), a continuation notice appended to a read
(``[12 more lines in file. Use offset=40 to continue.]``), an error Pi throws (``Could not find the exact text in …``),
a status (``Command exited with code 2``), the synthetic ``No result provided``, ``Operation aborted`` and
``Tool execution was blocked``. A model learns these texts like any other, so every one it sees must be one the
target Pi writes.

**The catalogue of a card** (``card_wordings``) is the card's own ``results``/``errors`` templates (captured from the
installed CLI: ``harness.pi.capture``) plus ``WORDINGS``, the wordings read from each release's package source — the
ones the capture does not probe (edit's other errors, the abort and block texts) and the ones older releases wrote
(still found in public sessions). Each ``Wording`` is a ``str.format`` template with named variables, the oldest and
newest release checked that writes it, and the file of the package it is written in.
``tests/harness/test_pi_texts.py`` holds the two sources equal where they overlap, for every committed card.

Ranges were read from the npm packages ``@mariozechner/pi-coding-agent`` 0.7.6, 0.13.2, 0.27.9, 0.30.2, 0.31.1,
0.32.3, 0.37.2, 0.37.8, 0.45.7, 0.49.3, 0.50.3, 0.50.7, 0.55.4, 0.60.0, 0.62.0, 0.63.0–0.63.2, 0.65.2, 0.70.6,
0.72.1, 0.73.0, 0.73.1 and ``@earendil-works/pi-coding-agent`` 0.79.10, 0.82.0, 0.84.0, 0.85.0, 1.6.0 (with
``pi-agent-core`` 0.7.6, 0.30.2, 0.50.7, 0.62.0, 0.63.2, 0.70.6, 0.72.1, 0.73.0 for the blocked text);
``since``/``until`` are the oldest/newest of these that write the text (``until=None``: still in the newest).

**Parsing and re-rendering** (``parse_text``, ``in_target_words``): a recorded text is matched against every
wording of every release for its tool; the most specific match (most fixed text, as ``HarnessCard.result_key``)
names the wording and gives its variables. A text in a wording the target writes is kept byte for byte; otherwise
it is re-rendered with the target's template for the same key, its variables taken from the text and, where the
text lacks one, from the call's arguments (``write``'s byte count is ``content.length``; ``edit``'s block count is
its number of edits). What cannot be re-rendered is a ``Failure``: ``harness_version_mismatch`` naming the
template when the target writes no such text or needs a variable nothing holds; ``unknown_pi_text`` when an
``edit``/``write`` result matches no wording of any release (never passed as exact). ``text_violations`` is the
verifier: the tool messages of a wire conversation whose Pi-authored text is not the target's.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harnessfit.core.rejection import Failure, Reason
from harnessfit.harness.pi.results import js_length, over_pi_limits
from harnessfit.harness.versions import PI_CARD_VERSIONS, parse_version

if TYPE_CHECKING:
    from harnessfit.harness.card import HarnessCard

__all__ = [
    "Wording",
    "WORDINGS",
    "Parsed",
    "card_wordings",
    "parse_text",
    "parse_text_fast",
    "in_target_words",
    "text_violations",
    "STRICT_TOOLS",
    "wording_tool",
    "authored_start",
    "RELEASES_READ",
    "text_releases",
    "releases_label",
]

RELEASES_READ: tuple[str, ...] = tuple(
    sorted(
        {
            *("0.7.6", "0.13.2", "0.27.9", "0.30.2", "0.31.1", "0.32.3", "0.37.2", "0.37.8", "0.45.7", "0.49.3"),
            *("0.50.3", "0.50.7", "0.55.4", "0.60.0", "0.62.0", "0.63.0", "0.63.1", "0.63.2", "0.65.2", "0.70.6"),
            *("0.72.1", "0.73.0", "0.84.0", "0.85.0"),
            *PI_CARD_VERSIONS,  # the committed cards' releases (harness.versions, their one source)
        },
        key=parse_version,
    )
)
"""The releases whose package source the catalogue's ranges were read from (module docstring), oldest first."""

_T = "dist/core/tools/"  # where a release's tools live (0.7.6–0.13.x: dist/tools/)


@dataclass(frozen=True, slots=True)
class Wording:
    """One text Pi writes: ``key`` (the card's ``results``/``errors`` key, or a catalogue key for texts the card does
    not capture), its ``template``, the releases ``since``…``until`` that write it (``None``: still written), the
    package file that writes it (``source``: a path in ``pi-coding-agent``, or ``<package>:<path>`` in one of the
    packages beside it) and the tool whose result it is (``tool``; ``None``: any tool)."""

    key: str
    template: str
    since: str
    until: str | None
    source: str
    tool: str | None

    def written_by(self, version: str) -> bool:
        v = parse_version(version)
        return parse_version(self.since) <= v and (self.until is None or v <= parse_version(self.until))

    def releases(self) -> str:
        return f"{self.since}–{self.until}" if self.until else f"{self.since}+"


_MORE = "{content}\n\n[{remaining} more lines in file. Use offset={next_offset} to continue"
_SHOW = "{content}\n\n[Showing lines {start}-{end} of {total}"
_OLD_READ = "dist/tools/read.js (0.7.6)"

WORDINGS: tuple[Wording, ...] = (
    # write
    Wording("write", "Successfully wrote {bytes} bytes to {path}", "0.7.6", "0.84.0", _T + "write.js", "write"),
    Wording("write", "Successfully wrote to {path}", "0.85.0", None, _T + "write.js", "write"),
    # edit: success
    Wording(
        "edit",
        "Successfully replaced text in {path}. Changed {old_chars} characters to {new_chars} characters.",
        "0.7.6",
        "0.30.2",
        _T + "edit.js",
        "edit",
    ),
    Wording("edit", "Successfully replaced text in {path}.", "0.31.1", "0.63.1", _T + "edit.js", "edit"),
    Wording("edit", "Successfully replaced {count} block(s) in {path}.", "0.63.0", None, _T + "edit.js", "edit"),
    # edit: errors (edit.js, edit-diff.js from 0.50)
    Wording(
        "edit_no_match",
        "Could not find the exact text in {path}. The old text must match exactly including all "
        "whitespace and newlines.",
        "0.7.6",
        None,
        _T + "edit-diff.js",
        "edit",
    ),
    Wording(
        "edit_no_match_multi",
        "Could not find edits[{index}] in {path}. The oldText must match exactly including "
        "all whitespace and newlines.",
        "0.63.0",
        None,
        _T + "edit-diff.js",
        "edit",
    ),
    Wording(
        "edit_not_unique",
        "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please "
        "provide more context to make it unique.",
        "0.7.6",
        None,
        _T + "edit-diff.js",
        "edit",
    ),
    Wording(
        "edit_not_unique_multi",
        "Found {occurrences} occurrences of edits[{index}] in {path}. Each oldText must "
        "be unique. Please provide more context to make it unique.",
        "0.63.0",
        None,
        _T + "edit-diff.js",
        "edit",
    ),
    Wording(
        "edit_no_change",
        "No changes made to {path}. The replacement produced identical content. This might "
        "indicate an issue with special characters or the text not existing as expected.",
        "0.13.2",
        None,
        _T + "edit-diff.js",
        "edit",
    ),
    Wording(
        "edit_no_change_multi",
        "No changes made to {path}. The replacements produced identical content.",
        "0.63.0",
        None,
        _T + "edit-diff.js",
        "edit",
    ),
    Wording("edit_empty_old", "oldText must not be empty in {path}.", "0.63.0", None, _T + "edit-diff.js", "edit"),
    Wording(
        "edit_empty_old_multi",
        "edits[{index}].oldText must not be empty in {path}.",
        "0.63.0",
        None,
        _T + "edit-diff.js",
        "edit",
    ),
    Wording(
        "edit_overlap",
        "edits[{index}] and edits[{other}] overlap in {path}. Merge them into one edit or target disjoint regions.",
        "0.63.0",
        None,
        _T + "edit-diff.js",
        "edit",
    ),
    Wording("edit_file_not_found", "File not found: {path}", "0.7.6", "0.70.6", _T + "edit.js", "edit"),
    Wording("edit_access_error", "Could not edit file: {path}. {error}.", "0.72.1", None, _T + "edit.js", "edit"),
    # read: notices (the card's read_* keys), and 0.7.x's own
    Wording(
        "read_not_shown",
        "{content}\n\n... ({remaining} more lines not shown. Use offset={next_offset} to continue reading)",
        "0.7.6",
        "0.7.6",
        _OLD_READ,
        "read",
    ),
    Wording(
        "read_lines_cut",
        "{content}\n\n... (Some lines were truncated to {max_chars} characters for display)",
        "0.7.6",
        "0.7.6",
        _OLD_READ,
        "read",
    ),
    Wording(
        "read_lines_cut",
        "{content}\n\n... (Some lines were truncated to {max_chars} characters for display. "
        "{remaining} more lines not shown. Use offset={next_offset} to continue reading)",
        "0.7.6",
        "0.7.6",
        _OLD_READ,
        "read",
    ),
    Wording("read_more_lines", _MORE + "]", "0.13.2", "0.49.3", _T + "read.js", "read"),
    Wording("read_more_lines", _MORE + ".]", "0.50.3", None, _T + "read.js", "read"),
    Wording(
        "read_truncated_lines",
        _SHOW + ". Use offset={next_offset} to continue]",
        "0.13.2",
        "0.49.3",
        _T + "read.js",
        "read",
    ),
    Wording(
        "read_truncated_lines",
        _SHOW + ". Use offset={next_offset} to continue.]",
        "0.50.3",
        None,
        _T + "read.js",
        "read",
    ),
    Wording(
        "read_truncated_bytes",
        _SHOW + " (50.0KB limit). Use offset={next_offset} to continue]",
        "0.13.2",
        "0.49.3",
        _T + "read.js",
        "read",
    ),
    Wording(
        "read_truncated_bytes",
        _SHOW + " (50.0KB limit). Use offset={next_offset} to continue.]",
        "0.50.3",
        None,
        _T + "read.js",
        "read",
    ),
    Wording(
        "read_line_too_long",
        "[Line {line} is {size}, exceeds 50.0KB limit. Use bash: sed -n '{line}p' {path} | head -c 51200]",
        "0.13.2",
        None,
        _T + "read.js",
        "read",
    ),
    Wording("read_image", "Read image file [{mime}]", "0.7.6", None, _T + "read.js", "read"),
    Wording("read_file_not_found", "Error: File not found: {path}", "0.7.6", "0.7.6", _OLD_READ, "read"),
    Wording(
        "offset_beyond_end",
        "Error: Offset {offset} is beyond end of file ({total} lines total)",
        "0.7.6",
        "0.7.6",
        _OLD_READ,
        "read",
    ),
    Wording(
        "offset_beyond_end",
        "Offset {offset} is beyond end of file ({total} lines total)",
        "0.13.2",
        None,
        _T + "read.js",
        "read",
    ),
    # bash: 0.7.x's failure wording (later ones are the card's bash_* templates)
    Wording(
        "bash_failed",
        "Command failed\n\n{output}Command exited with code {code}",
        "0.7.6",
        "0.7.6",
        "dist/tools/bash.js (0.7.6)",
        "bash",
    ),
    # any tool
    Wording("no_result", "No result provided", "0.7.6", None, "pi-ai:dist/*/transform-messages.js", None),
    Wording("operation_aborted", "Operation aborted", "0.7.6", None, _T + "read.js", None),  # also write/edit.js
    Wording("tool_blocked", "Tool execution was blocked", "0.62.0", None, "pi-agent-core:dist/agent-loop.js", None),
)

STRICT_TOOLS = frozenset({"edit", "write"})
"""Tools whose every result is a Pi-authored text (no ``{content}``/``{output}`` template can hold it): a result of
one that matches no wording of any release is an unknown text."""

_NUMERIC = frozenset(
    {
        "bytes",
        "count",
        "old_chars",
        "new_chars",
        "remaining",
        "next_offset",
        "start",
        "end",
        "total",
        "index",
        "other",
        "occurrences",
        "code",
        "seconds",
        "offset",
        "line",
        "max_chars",
        "limit",
        "more",
    }
)


def wording_tool(key: str) -> str | None:
    """The tool a card key's text belongs to (``read_more_lines`` → ``read``); ``None`` for texts of any tool."""
    for tool in ("read", "bash", "edit", "write", "grep", "find", "ls"):
        if key == tool or key.startswith(tool + "_"):
            return tool
    return "read" if key == "offset_beyond_end" else None


@functools.cache
def _compiled(template: str) -> tuple[re.Pattern[str], int, tuple[str, ...], str, str]:
    """A template as a regex with one named group per variable (numbers as digits; a repeated name must repeat
    its text), its fixed-text length, its variables, and its fixed head and tail."""
    pattern, fixed, names, items = "", 0, [], list(string.Formatter().parse(template))
    for literal, name, _, _ in items:
        pattern += re.escape(literal)
        fixed += len(literal)
        if name is None:
            continue
        if name in names:
            pattern += f"(?P={name})"
        else:
            names.append(name)
            pattern += f"(?P<{name}>-?\\d+(?:\\.\\d+)?)" if name in _NUMERIC else f"(?P<{name}>(?s:.*?))"
    head = items[0][0] if items else ""
    tail = items[-1][0] if items and items[-1][1] is None else ""
    return re.compile(pattern + r"\Z", re.DOTALL), fixed, tuple(names), head, tail


def _card_wordings(card: HarnessCard) -> tuple[Wording, ...]:
    source = f"captured from pi@{card.version} (harness/cards/{card.id}.json)"
    return tuple(
        Wording(k, t, card.version, card.version, source, wording_tool(k))
        for k, t in [*card.results.items(), *card.errors.items()]
        if k not in ("validation_problem", "arguments_not_object")
    )


_CARD_WORDINGS: dict[int, tuple[HarnessCard, tuple[Wording, ...]]] = {}


def card_wordings(card: HarnessCard) -> tuple[Wording, ...]:
    """Every text Pi ``card.version`` writes: the card's templates, then the catalogue's wordings of that release
    whose key the card does not capture (kept per card object)."""
    hit = _CARD_WORDINGS.get(id(card))
    if hit is None or hit[0] is not card:
        own = _card_wordings(card)
        keys = {w.key for w in own}
        extra = tuple(w for w in WORDINGS if w.key not in keys and w.written_by(card.version))
        hit = _CARD_WORDINGS[id(card)] = (card, own + extra)
    return hit[1]


@dataclass(frozen=True, slots=True)
class Parsed:
    """A text matched to the ``wording`` that made it, with its variables (``values``)."""

    wording: Wording
    values: dict[str, str]


def _candidates(card: HarnessCard, tool: str) -> list[Wording]:
    return [w for w in (*card_wordings(card), *WORDINGS) if w.tool in (None, tool)]


def parse_text(card: HarnessCard, tool: str, text: str) -> Parsed | None:
    """The most specific wording (of ``card`` or of any release in the catalogue) that makes ``text``, the result of
    a call to ``tool``; the card's own wording first among equals. ``None``: none does. (The plain definition; the
    converter asks ``parse_text_fast``, which a test holds equal to it.)"""
    best: tuple[int, Parsed] | None = None
    for w in _candidates(card, tool):
        pattern, fixed, _, head, tail = _compiled(w.template)
        if best is not None and fixed <= best[0]:
            continue
        if not (text.startswith(head) and text.endswith(tail)):
            continue
        m = pattern.match(text)
        if m is not None:
            best = (fixed, Parsed(w, m.groupdict()))
    return None if best is None else best[1]


_ORDERED: dict[tuple[int, str], tuple[HarnessCard, tuple[tuple[Wording, re.Pattern[str], str, str], ...]]] = {}


def parse_text_fast(card: HarnessCard, tool: str, text: str) -> Parsed | None:
    """``parse_text``, with each (card, tool)'s candidates ordered once by fixed-text length, most first (a stable
    sort, so the card's own wording stays first among equals): the first wording that makes the text is the answer."""
    hit = _ORDERED.get((id(card), tool))
    if hit is None or hit[0] is not card:
        ranked = sorted(_candidates(card, tool), key=lambda w: -_compiled(w.template)[1])
        rows = []
        for w in ranked:
            pattern, _, _, head, tail = _compiled(w.template)
            rows.append((w, pattern, head, tail))
        hit = _ORDERED[(id(card), tool)] = (card, tuple(rows))
    for w, pattern, head, tail in hit[1]:
        if text.startswith(head) and text.endswith(tail):
            m = pattern.match(text)
            if m is not None:
                return Parsed(w, m.groupdict())
    return None


def authored_start(card: HarnessCard, text: str) -> int | None:
    """Where the Pi-authored part of ``text`` begins when it is a text of a Pi tool with fixed wording (0: all of it,
    e.g. a write's success line; after the shown file for a read's notice); ``None`` for the environment's text
    alone (a plain ``{content}``/``{output}``)."""
    for tool in ("edit", "write", "read", "bash"):
        parsed = parse_text_fast(card, tool, text)
        if parsed is None or _compiled(parsed.wording.template)[1] == 0:
            continue
        names = _compiled(parsed.wording.template)[2]
        leading = parsed.wording.template.startswith("{")
        return len(parsed.values[names[0]]) if leading else 0
    return None


def _writes(card: HarnessCard, template: str, tool: str) -> bool:
    return any(w.template == template for w in card_wordings(card) if w.tool in (None, tool))


def _derived(tool: str, arguments: Any) -> dict[str, Any]:
    """Variables a result text may lack that the call's arguments give."""
    if not isinstance(arguments, Mapping):
        return {}
    out: dict[str, Any] = {}
    if isinstance(arguments.get("path"), str):
        out["path"] = arguments["path"]
    if tool == "write" and isinstance(arguments.get("content"), str):
        out["bytes"] = js_length(arguments["content"])
    edits = arguments.get("edits")
    if tool == "edit" and isinstance(edits, list):
        out["count"] = len(edits)
    elif tool == "edit" and isinstance(arguments.get("oldText"), str) and isinstance(arguments.get("newText"), str):
        out["count"] = 1
        out["old_chars"], out["new_chars"] = js_length(arguments["oldText"]), js_length(arguments["newText"])
    return out


def _target_key(parsed: Parsed, arguments: Any, values: dict[str, Any]) -> str:
    """The key the target words ``parsed`` under: 0.7.x's one "not shown" notice is the later ``read_more_lines``
    for a read with a ``limit`` and ``read_truncated_lines`` (its 2000-line cap) for one without."""
    if parsed.wording.key != "read_not_shown":
        return parsed.wording.key
    if isinstance(arguments, Mapping) and arguments.get("limit") is not None:
        return "read_more_lines"
    shown = values["content"].count("\n") + 1
    offset = arguments.get("offset") if isinstance(arguments, Mapping) else None
    start = offset if isinstance(offset, int) and offset > 0 else 1
    values.update(start=start, end=start + shown - 1, total=start + shown - 1 + int(values["remaining"]))
    return "read_truncated_lines"


def _over_read_limits(content: str) -> bool:
    """Whether a read's shown text is over Pi's 2000-line / 50 KB caps (a final newline opens no line of its own)."""
    return over_pi_limits(content[:-1] if content.endswith("\n") else content) is not None


def _mismatch(tool: str, parsed: Parsed, card: HarnessCard, why: str) -> Failure:
    w = parsed.wording
    return Failure(
        Reason.harness_version_mismatch,
        f"{tool}: the result is Pi {w.releases()}'s {w.key} text {w.template!r} ({w.source}); {why}",
        "convert for a Pi that writes this text (--harness pi@VERSION), or re-record the task with the "
        f"target Pi (pi@{card.version})",
    )


def in_target_words(card: HarnessCard, tool: str, text: str, arguments: Any = None) -> str | Failure:
    """``text`` (the recorded result of a call to ``tool`` with ``arguments``) as Pi ``card.version`` writes it
    (module docstring): the text itself when its wording is the target's, else re-rendered, else a ``Failure``."""
    parsed = parse_text_fast(card, tool, text)
    if parsed is None:
        if tool in STRICT_TOOLS:
            return Failure(
                Reason.unknown_pi_text,
                f"{tool}: the result {text[:120]!r} matches no text any known Pi "
                "release writes (harness/pi_texts.py), so the target's words for it are unknown",
                "add the wording to the catalogue (harness/pi_texts.py) with its source, or re-record",
            )
        return text
    if _writes(card, parsed.wording.template, tool):
        if parsed.wording.key == "read" and _over_read_limits(text):  # 0.7.x read had no 50 KB cap
            return _mismatch(
                tool, parsed, card, f"the text is over Pi {card.version}'s read limits, which cut it and add a notice"
            )
        return text
    values: dict[str, Any] = {**_derived(tool, arguments), **parsed.values}
    key = _target_key(parsed, arguments, values)
    targets = [w for w in card_wordings(card) if w.key == key and w.tool in (None, tool)]
    if not targets:
        return _mismatch(tool, parsed, card, f"Pi {card.version} writes no {key} text")
    template = targets[0].template
    missing = [n for n in _compiled(template)[2] if n not in values]
    if missing:
        return _mismatch(
            tool,
            parsed,
            card,
            f"Pi {card.version} writes {template!r}, which needs {', '.join(missing)}: the session does not hold it",
        )
    if "content" in values and key.startswith("read") and _over_read_limits(values["content"]):
        return _mismatch(
            tool, parsed, card, f"its content is over Pi {card.version}'s read limits, which cut it otherwise"
        )
    return template.format(**values)


def text_violations(card: HarnessCard, messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """The tool messages of a wire conversation whose Pi-authored text Pi ``card.version`` does not write: the
    text's most specific wording (``parse_text``) is not one of the card's, or an ``edit``/``write`` result matches
    no wording at all. One line per violation (message index, tool, wording)."""
    names: dict[str, str] = {}
    out: list[str] = []
    for n, m in enumerate(messages):
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or ():
                names[c.get("id")] = c.get("function", {}).get("name", "")
            continue
        if m.get("role") != "tool" or not isinstance(m.get("content"), str):
            continue
        tool = names.get(m.get("tool_call_id"), "")
        parsed = parse_text_fast(card, tool, m["content"])
        if parsed is None:
            if tool in STRICT_TOOLS:
                out.append(f"message {n} ({tool}): matches no Pi wording: {m['content'][:80]!r}")
        elif not _writes(card, parsed.wording.template, tool):
            w = parsed.wording
            out.append(
                f"message {n} ({tool}): Pi {w.releases()}'s {w.key} text {w.template!r}, not Pi {card.version}'s"
            )
    return out


def _fitting_releases(tool: str, text: str) -> frozenset[str] | None:
    """The releases read (``RELEASES_READ``) that write ``text`` as a result of ``tool``, judged by the catalogue's
    own wordings (``WORDINGS``, whose ranges were read from each release's source): the releases of every wording
    that makes the text with the most fixed text. ``None`` when the text tells nothing: no catalogue wording with
    fixed text makes it (the environment's text alone, or a wording only a committed card's capture holds, whose
    older releases were not read)."""
    best, found = 0, list[Wording]()
    for w in WORDINGS:
        if w.tool not in (None, tool):
            continue
        pattern, fixed, _, head, tail = _compiled(w.template)
        if fixed == 0 or fixed < best or not (text.startswith(head) and text.endswith(tail)):
            continue
        if pattern.match(text) is None:
            continue
        if fixed > best:
            best, found = fixed, []
        found.append(w)
    if not found:
        return None
    return _releases_writing(tuple(found))


@functools.lru_cache(maxsize=256)
def _releases_writing(wordings: tuple[Wording, ...]) -> frozenset[str]:
    """The releases read that write any of ``wordings`` (cached: a session asks it of the same few wordings)."""
    return frozenset(r for r in RELEASES_READ if any(w.written_by(r) for w in wordings))


def text_releases(results: Iterable[tuple[str, str]]) -> tuple[str, ...] | None:
    """The releases read that write every Pi-authored text among ``results`` ((tool, result text) pairs of one
    session), oldest first: how a session's own words date it where its layout cannot (a 0.x session's edit results
    ``Successfully replaced text in …`` fit only releases before 0.63.1). ``()`` when no release writes them all
    (texts of several releases: a session continued after an update); ``None`` when no text tells anything."""
    fit: frozenset[str] | None = None
    for tool, text in results:
        releases = _fitting_releases(tool, text)
        if releases is not None:
            fit = releases if fit is None else fit & releases
    return None if fit is None else tuple(r for r in RELEASES_READ if r in fit)


def releases_label(releases: tuple[str, ...] | None) -> str | None:
    """``text_releases`` for a summary line: ``0.31.1–0.62.0`` (the oldest and newest release read that fit),
    ``several releases`` when none fits all, ``None`` when the texts tell nothing."""
    if releases is None:
        return None
    if not releases:
        return "several releases"
    return releases[0] if len(releases) == 1 else f"{releases[0]}–{releases[-1]}"
