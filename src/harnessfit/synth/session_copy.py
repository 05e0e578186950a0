"""A recorded Pi session as it is kept for training: the episode's folder renamed, and what changes from run to run
pinned, so that synthesising the same tasks on the same day writes the same bytes.

Pi writes into every session a fresh session id (a time-based UUID), random 8-hex entry ids, wall-clock timestamps,
each response's duration and the endpoint's response id. None of them reaches the model (Pi's requests carry none)
and the converter reads only the tree the ids make, the day of the timestamps (older Pis' prompts show the date) and
the messages. Left as recorded they make every copy's SHA-256 differ, and with it the dataset's record ids, splits
and training order. So the copy gets ids derived from what the episode was (kind, task, seed) and its entry order,
timestamps at the recorded day's midnight plus one millisecond per entry, durations of 0 and response ids numbered by
entry; every message, tool call, result and the tree itself stay as Pi wrote them.
"""

from __future__ import annotations

import datetime
import hashlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from harnessfit.errors import UserError
from harnessfit.formats.pi.entries import CONTEXT_ONLY_ENTRY

__all__ = ["copy_session", "pin_session", "Marks"]

Marks = Callable[[list[dict[str, Any]]], list[tuple[str, str]]]
"""Given a session's entries (pinned), the (entry id, why) of each assistant message to mark context only."""

_NAMESPACE = uuid.UUID("6f1c2f0e-2b7a-4b1e-9a51-7d3c0e4f5a10")  # harnessfit's namespace for pinned session ids


def _day_start(timestamp: Any) -> datetime.datetime:
    """Midnight (UTC) of the day an ISO timestamp names; of 1970-01-01 when there is none."""
    if isinstance(timestamp, str) and len(timestamp) >= 10:
        try:
            day = datetime.date.fromisoformat(timestamp[:10])
        except ValueError:
            day = datetime.date(1970, 1, 1)
    else:
        day = datetime.date(1970, 1, 1)
    return datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC)


def _iso(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def pin_session(header: dict[str, Any], entries: list[dict[str, Any]], key: str) -> None:
    """Pin, in place, the run-to-run fields of a session (module docstring): ``header`` its first line, ``entries``
    the others in file order, ``key`` what the episode was (e.g. ``golden/edit_constant-0-0000/seed-0``)."""
    start = _day_start(header.get("timestamp"))
    header["id"] = str(uuid.uuid5(_NAMESPACE, key))
    header["timestamp"] = _iso(start)
    salt = hashlib.sha256(key.encode()).hexdigest()[:4]
    ids = {e["id"]: f"{salt}{n:04x}" for n, e in enumerate(entries) if isinstance(e.get("id"), str)}
    for n, entry in enumerate(entries, start=1):
        moment = start + datetime.timedelta(milliseconds=n)
        for name, value in list(entry.items()):
            if (name == "id" or name.endswith("Id")) and isinstance(value, str) and value in ids:
                entry[name] = ids[value]
        if "timestamp" in entry:
            entry["timestamp"] = _iso(moment)
        msg = entry.get("message")
        if isinstance(msg, dict):
            if isinstance(msg.get("timestamp"), int | float):
                msg["timestamp"] = int(moment.timestamp() * 1000)
            if "durationMs" in msg:
                msg["durationMs"] = 0
            if isinstance(msg.get("responseId"), str):
                msg["responseId"] = f"response-{n}"


def _append_marks(entries: list[dict[str, Any]], marks: list[tuple[str, str]], key: str) -> None:
    """Append one context-only marker per mark at the end of the active path (each the child of the entry before),
    with ids and timestamps continuing ``pin_session``'s."""
    if not marks or not entries:
        return
    salt = hashlib.sha256(key.encode()).hexdigest()[:4]
    last = entries[-1]
    for target, why in marks:
        n = len(entries)
        try:
            moment = datetime.datetime.fromisoformat(str(last.get("timestamp")).replace("Z", "+00:00"))
        except ValueError:  # an entry without a timestamp: the marker takes the day's start
            moment = _day_start(last.get("timestamp"))
        entry = {
            "type": "custom",
            "customType": CONTEXT_ONLY_ENTRY,
            "data": {"targetId": target, "why": why},
            "id": f"{salt}{n:04x}",
            "parentId": last.get("id"),
            "timestamp": _iso(moment + datetime.timedelta(milliseconds=1)),
        }
        entries.append(entry)
        last = entry


def copy_session(src: Path, dst: Path, workspace: str, key: str, marks: Marks | None = None) -> None:
    """Copy a Pi session file, naming ``workspace`` instead of the episode's real working folder (the header's
    ``cwd`` and any other mention of that folder) and pinning what changes from run to run (``pin_session``). The
    build groups a session without a repository by its working folder, so a real path (under the project's clone,
    perhaps ``/home/<user>``) would make the dataset's groups, splits and redactions depend on where the project
    lives. ``marks`` names assistant messages to mark context only: a marker entry
    (``formats.pi.entries.CONTEXT_ONLY_ENTRY``, a custom entry Pi never sends) is appended for each."""
    lines = [line for line in src.read_bytes().split(b"\n") if line.strip()]
    header = orjson.loads(lines[0]) if lines else None
    real = header.get("cwd") if isinstance(header, dict) else None
    if not isinstance(header, dict) or header.get("type") != "session" or not isinstance(real, str) or not real:
        raise UserError(f"{src}: not a Pi session file (its first line has no session header with a cwd)")
    old, new = orjson.dumps(real)[1:-1], orjson.dumps(workspace)[1:-1]  # as they appear inside JSON strings
    entries = [orjson.loads(line.replace(old, new)) for line in lines[1:]]
    header["cwd"] = workspace
    pin_session(header, entries, key)
    if marks is not None:
        _append_marks(entries, marks(entries), key)
    dst.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in [header, *entries]))
