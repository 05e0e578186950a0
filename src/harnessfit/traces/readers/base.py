"""The reader plugin contract, and the safe-reading helpers every reader shares.

A *reader* turns one input *unit* (a file, or a folder for formats stored one-file-per-event such as OpenHands V1)
into canonical ``Trajectory`` records, or ``Rejection`` records for whatever it could not read. It never raises on
bad input data: a corrupt line, a truncated file, a binary or non-UTF-8 file, an empty file, or a single huge line
each becomes a ``Rejection`` with a reason and, where it applies, line numbers.

Contract (``Reader`` below):

- ``name``: the format name used in the registry and in provenance (``"pi"``, ``"claude_code"``…).
- ``detect(path) -> bool``: cheap, by *content* (sniff the first bytes / first JSON keys with :func:`sniff` or
  :func:`first_json_line`), never only by file name. Called on files *and* on folders during the walk: return
  ``True`` for a folder only if the folder itself is one unit of your format (the walk then does not recurse into
  it). Must not raise (return ``False`` on any error).
- ``read(path) -> Iterator[Trajectory | Rejection]``: every record is yielded in a deterministic order.
  ``provenance.file`` / ``Rejection.file`` may be ``str(path)``; the walk rewrites it to a stable label (see
  ``registry.relabel``). Ids must come from content (``harnessfit.core.ids.content_id`` over the file SHA-256 and a
  position), never from the path, the clock or the host.

Readers keep the *source's* tool names and argument shapes in the Trajectory (mapping to the harness is
``harnessfit.convert.mappings``). Facts a gate turns into a rejection are put into ``Trajectory.flags``:

- ``subagent`` (a sub-agent / sidechain run), ``side_branch`` (a non-active branch of a session tree),
- ``lines_lost`` (some lines of the unit could not be read: each got its own ``Rejection``; the gate rejects the
  trajectory too, because a conversation with a hole must not be trained),
- ``truncated`` (the unit ended mid-record).

Accounting: every record a reader yields is one "read" record. The converter turns each Trajectory into exactly
one Conversation or one Rejection and passes reader Rejections through, so ``read = accepted + rejected``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import orjson

from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.jsonio import sha256_file
from harnessfit.core.ids import content_id, root_request_id
from harnessfit.core.trajectory import Provenance, Step, Trajectory

__all__ = [
    "Reader",
    "JsonLine",
    "SNIFF_BYTES",
    "MAX_LINE_BYTES",
    "MAX_DOCUMENT_BYTES",
    "sniff",
    "first_json_line",
    "looks_binary",
    "file_problem",
    "reject",
    "iter_json_lines",
    "load_json_document",
    "make_trajectory",
    "file_sha256",
]

SNIFF_BYTES = 64 * 1024
"""How much a ``detect`` may read from the start of a file."""

MAX_LINE_BYTES = 16 * 1024 * 1024
"""A JSONL line longer than this becomes a ``line_too_long`` rejection (it is skipped, never loaded whole)."""

MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
"""A whole-file JSON document (``.json``, ``.traj``) larger than this is rejected as ``line_too_long``."""


@runtime_checkable
class Reader(Protocol):
    """One trace format. Implement ``name``, ``detect`` and ``read``; register one line in ``registry.FORMATS``."""

    name: str

    def detect(self, path: Path) -> bool: ...

    def read(self, path: Path) -> Iterator[Trajectory | Rejection]: ...


@dataclass(frozen=True, slots=True)
class JsonLine:
    """One parsed JSONL line: ``lineno`` is 1-based, ``value`` the parsed JSON (any type)."""

    lineno: int
    value: Any


def sniff(path: Path, n: int = SNIFF_BYTES) -> bytes:
    """The first ``n`` bytes of a file (``b""`` for folders and unreadable paths)."""
    try:
        if not path.is_file():
            return b""
        with path.open("rb") as fh:
            return fh.read(n)
    except OSError:
        return b""


def looks_binary(head: bytes) -> bool:
    """NUL bytes in the first block: a binary file (UTF-16 text included; we only read UTF-8)."""
    return b"\x00" in head


def first_json_line(path: Path, max_bytes: int = 4 * 1024 * 1024) -> Any:
    """Parse the first non-blank line of a file as JSON; ``None`` if it is not JSON (or the file unreadable)."""
    try:
        if not path.is_file():
            return None
        with path.open("rb") as fh:
            for _ in range(64):
                line = fh.readline(max_bytes)
                if not line:
                    return None
                if line.strip():
                    try:
                        return orjson.loads(line)
                    except orjson.JSONDecodeError:
                        return None
    except OSError:
        return None
    return None


def reject(
    path: Path | str,
    fmt: str,
    reason: Reason,
    detail: str,
    repair_hint: str,
    *,
    sha256: str = "",
    line_start: int | None = None,
    line_end: int | None = None,
    record_id: str | None = None,
) -> Rejection:
    """A Rejection for something read from ``path``; the id is derived from the file hash, reason and position."""
    rid = record_id or content_id("reject", fmt, sha256 or str(path), reason.value, str(line_start), str(line_end))
    return Rejection(
        record_id=rid,
        source=fmt,
        file=str(path),
        line_start=line_start,
        line_end=line_end,
        reason=reason,
        detail=detail,
        repair_hint=repair_hint,
    )


def file_problem(path: Path, fmt: str, sha256: str = "") -> Rejection | None:
    """File-level checks every reader runs first: unreadable, empty (or blank), binary. ``None`` when fine."""
    try:
        size = path.stat().st_size
        head = sniff(path, 8192)
    except OSError as exc:
        return reject(path, fmt, Reason.parse_error, f"cannot read file: {exc.strerror}", "check permissions", sha256=sha256)
    if size == 0 or (size <= len(head) and not head.strip()):
        return reject(path, fmt, Reason.empty, "file is empty", "remove the file or re-export the session", sha256=sha256)
    if looks_binary(head):
        return reject(
            path, fmt, Reason.binary_file, "file contains NUL bytes (binary, or not UTF-8 text)",
            "pass the JSON/JSONL session file itself (decompress or re-encode as UTF-8)", sha256=sha256,
        )
    return None


def iter_json_lines(path: Path, fmt: str, sha256: str = "") -> Iterator[JsonLine | Rejection]:
    """Stream a JSONL file line by line, yielding ``JsonLine`` for good lines and a ``Rejection`` for each bad one.

    Blank lines are skipped. A line over ``MAX_LINE_BYTES`` is skipped without being held in memory
    (``line_too_long``); invalid UTF-8 is ``not_utf8``; invalid JSON is ``parse_error``, except on a last line
    without a newline, which is ``truncated_file`` (the writer stopped mid-record).
    """
    try:
        fh = path.open("rb")
    except OSError as exc:
        yield reject(path, fmt, Reason.parse_error, f"cannot open: {exc.strerror}", "check permissions", sha256=sha256)
        return
    with fh:
        lineno = 0
        while True:
            line = fh.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            lineno += 1
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                size = len(line)
                while True:  # skip the rest of the long line in blocks
                    more = fh.readline(1 << 20)
                    size += len(more)
                    if not more or more.endswith(b"\n"):
                        break
                yield reject(
                    path, fmt, Reason.line_too_long, f"line {lineno} is {size} bytes (limit {MAX_LINE_BYTES})",
                    "split or trim the oversized record (usually an embedded file or image)",
                    sha256=sha256, line_start=lineno, line_end=lineno,
                )
                continue
            if not line.strip():
                continue
            try:
                value = orjson.loads(line)  # orjson accepts only valid UTF-8, so a parsed line needs no decode check
            except orjson.JSONDecodeError as exc:
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as bad:
                    yield reject(
                        path, fmt, Reason.not_utf8, f"line {lineno}: invalid UTF-8 at byte {bad.start}",
                        "re-encode the file as UTF-8", sha256=sha256, line_start=lineno, line_end=lineno,
                    )
                    continue
                last = not line.endswith(b"\n")  # readline only stops without a newline at end of file
                reason = Reason.truncated_file if last else Reason.parse_error
                hint = "the file ends mid-record: drop the partial last line" if last else "fix or remove the line"
                yield reject(
                    path, fmt, reason, f"line {lineno}: invalid JSON ({str(exc)[:120]})", hint,
                    sha256=sha256, line_start=lineno, line_end=lineno,
                )
                continue
            yield JsonLine(lineno, value)


def load_json_document(path: Path, fmt: str, sha256: str = "") -> Any | Rejection:
    """Load a whole-file JSON document (bounded by ``MAX_DOCUMENT_BYTES``), or a Rejection saying why not."""
    problem = file_problem(path, fmt, sha256)
    if problem is not None:
        return problem
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            return reject(
                path, fmt, Reason.line_too_long, f"document is {size} bytes (limit {MAX_DOCUMENT_BYTES})",
                "split the file into smaller documents", sha256=sha256,
            )
        data = path.read_bytes()
    except OSError as exc:
        return reject(path, fmt, Reason.parse_error, f"cannot read: {exc.strerror}", "check permissions", sha256=sha256)
    try:
        return orjson.loads(data)  # valid UTF-8 is part of orjson's check; the decode below only names the cause
    except orjson.JSONDecodeError as exc:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            return reject(path, fmt, Reason.not_utf8, f"invalid UTF-8 at byte {bad.start}", "re-encode the file as UTF-8",
                          sha256=sha256)
        msg = str(exc)
        truncated = "EOF" in msg or "end of" in msg.lower() or getattr(exc, "pos", 0) >= len(data.rstrip()) - 1
        return reject(
            path, fmt, Reason.truncated_file if truncated else Reason.parse_error, f"invalid JSON ({msg[:160]})",
            "the document ends early: re-export it" if truncated else "fix the JSON syntax", sha256=sha256,
        )


def make_trajectory(
    *,
    fmt: str,
    path: Path | str,
    sha256: str,
    key: str,
    steps: list[Step],
    cwd: str | None = None,
    date: str | None = None,
    repository: str | None = None,
    source_harness_version: str | None = None,
    flags: list[str] | None = None,
    line_start: int | None = None,
    line_end: int | None = None,
    transformations: list[str] | None = None,
) -> Trajectory:
    """Build a Trajectory with content-derived ids.

    ``key`` distinguishes several trajectories from one unit (a branch leaf id, an index); ``id`` hashes the file
    SHA-256, the format and the key. ``root_request_id`` groups runs that start from the same first user prompt
    in the same repository (``repository`` falls back to ``cwd``).
    """
    first_prompt = next((s.text or "" for s in steps if s.role == "user"), "")
    return Trajectory(
        id=content_id("traj", fmt, sha256, key),
        source=fmt,
        steps=steps,
        cwd=cwd,
        date=date,
        repository=repository,
        root_request_id=root_request_id(first_prompt, repository or cwd),
        source_harness_version=source_harness_version,
        flags=sorted(set(flags or [])),
        provenance=Provenance(
            format=fmt,
            file=str(path),
            sha256=sha256,
            line_start=line_start,
            line_end=line_end,
            transformations=list(transformations or []),
        ),
    )


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, or of a folder unit (sorted relative names and file hashes); ``""`` if unreadable."""
    try:
        if path.is_dir():
            parts = []
            for p in sorted(q for q in path.rglob("*") if q.is_file()):
                parts.append(f"{p.relative_to(path).as_posix()}:{sha256_file(p)}")
            return content_id("dir", *parts, length=64)
        return sha256_file(path)
    except OSError:
        return ""

