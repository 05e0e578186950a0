"""The rollout layouts the Codex CLI has written, as one stream of ``Record``s (``kind``, ``payload``).

Checked in the ``openai/codex`` sources (``codex-rs/core/src/rollout/recorder.rs`` and its history,
``codex-rs/protocol/src/protocol.rs`` ``RolloutLine``/``RolloutItem``, ``codex-cli/src/utils/storage/save-rollout.ts``):

- ``envelope`` (codex-rs since September 2025 — 0.40.0 writes it — to today): every line is a ``RolloutLine``
  ``{timestamp, type, payload}`` whose ``type`` is ``session_meta``, ``response_item``, ``compacted``,
  ``turn_context`` or ``event_msg`` (the reader counts and ignores any other). The record is the envelope's type and
  payload; a line that is no envelope is counted and skipped (Codex skips it when it resumes the file).
- ``legacy`` (codex-rs, spring and summer 2025): the first line is the session meta itself (``SessionMetaWithGit``:
  ``{id, timestamp, instructions, git?}``, later also ``cwd``, ``originator``, ``cli_version`` and
  ``"record_type": "session_meta"``), then bare ``ResponseItem`` lines; ``{"record_type": "state"}`` lines are session
  state snapshots (nothing the model sees); later versions also wrote ``{"record_type": "event", "id", "msg"}``
  (an ``EventMsg``) and ``{"record_type": "prev_session_meta", …}`` when a session was resumed; a line without
  ``record_type`` (or ``"response"``) is a response item. Newer versions cannot resume such a file (they find no
  ``session_meta`` envelope), so a file never mixes the two JSONL layouts.
- ``ts_json`` (the TypeScript ``codex-cli``, spring 2025: ``~/.codex/sessions/rollout-<date>-<uuid>.json``): one
  JSON document ``{"session": {timestamp, id, instructions}, "items": [ResponseItem…]}``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessfit.core.jsonl import JsonLine
from harnessfit.core.rejection import Rejection
from harnessfit.formats.reading import first_json_line, sniff

__all__ = ["ENVELOPE_TYPES", "Record", "layout_of", "detect_layout", "records"]

ENVELOPE_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
_TS_HEAD = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"session"\s*:\s*\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"id"\s*:\s*"')


@dataclass(frozen=True, slots=True)
class Record:
    """One rollout record: ``kind`` (``session_meta``, ``response_item``, ``compacted``, ``turn_context``,
    ``event_msg``, another envelope type, or a ``…_ignored`` note), its ``payload``, the line it starts on, its
    position (1-based, bad records included) and the file's ``layout``."""

    kind: str
    payload: dict[str, Any]
    lineno: int
    index: int
    timestamp: Any = None
    layout: str = "envelope"


def _is_envelope(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("type") in ENVELOPE_TYPES
        and isinstance(value.get("payload"), dict)
        and "timestamp" in value
    )


def _is_legacy_meta(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and "type" not in value
        and "instructions" in value
        and isinstance(value.get("id"), str)
        and isinstance(value.get("timestamp"), str)
        and value.get("record_type", "session_meta") == "session_meta"
    )


def _is_ts_document(value: Any) -> bool:
    session = value.get("session") if isinstance(value, dict) else None
    return (
        isinstance(session, dict)
        and isinstance(session.get("id"), str)
        and isinstance(session.get("timestamp"), str)
        and isinstance(value.get("items"), list)
    )


def layout_of(first: Any) -> str | None:
    """The layout a file's first record says, or ``None`` when it is no Codex rollout."""
    if _is_envelope(first):
        return "envelope"
    if _is_legacy_meta(first):
        return "legacy"
    if _is_ts_document(first):
        return "ts_json"
    return None


def detect_layout(path: Path) -> str | None:
    """``layout_of`` the file's first record; a TypeScript document too large to parse for detection is recognised
    by its first bytes (``JSON.stringify`` writes ``session`` first, with ``timestamp`` then ``id``)."""
    layout = layout_of(first_json_line(path))
    if layout is None and _TS_HEAD.match(sniff(path)):
        return "ts_json"
    return layout


def _without_record_type(value: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k != "record_type"}


def _legacy(value: Any, first: bool) -> tuple[str, dict[str, Any]]:
    """(kind, payload) of one record of the 2025 bare-item layout."""
    if not isinstance(value, dict):
        return "non_object_line_ignored", {}
    rtype = value.get("record_type")
    if first or rtype in ("session_meta", "prev_session_meta"):
        return "session_meta", _without_record_type(value)
    if rtype == "state":
        return "state_line_ignored", {}
    if rtype == "event":
        msg = value.get("msg")
        return "event_msg", msg if isinstance(msg, dict) else {}
    if rtype in (None, "response"):
        return "response_item", _without_record_type(value)
    return f"record_type_{rtype}_ignored", {}


def records(lines: Iterator[JsonLine | Rejection]) -> Iterator[Record | Rejection]:
    """The records of a rollout in file order, whatever its layout (decided by its first record); bad lines pass
    through as the ``Rejection``s ``json_lines`` made of them."""
    layout: str | None = None
    index = 0
    for line in lines:
        if isinstance(line, Rejection):
            index += 1  # a bad record keeps its position, so the records after it are numbered as before
            yield line
            continue
        value = line.value
        if layout is None:
            layout = layout_of(value) or "envelope"
            first = True
        else:
            first = False
        if layout == "ts_json" and _is_ts_document(value):
            index += 1
            yield Record("session_meta", value["session"], line.lineno, index, layout=layout)
            for item in value["items"]:
                index += 1
                yield Record("response_item", item if isinstance(item, dict) else {}, line.lineno, index, layout=layout)
            continue
        index += 1
        if layout == "legacy":
            kind, payload = _legacy(value, first)
            yield Record(kind, payload, line.lineno, index, layout=layout)
        elif isinstance(value, dict) and isinstance(value.get("payload"), dict):
            yield Record(str(value.get("type")), value["payload"], line.lineno, index, value.get("timestamp"))
        else:
            yield Record("non_envelope_line_ignored", {}, line.lineno, index)
