"""Safe reading helpers every reader shares: cheap sniffing for ``detect``, file-level checks, whole-document JSON
loading and unit hashing. None of them raises on bad input: a problem becomes a ``Rejection`` saying why.

(JSONL streaming, in every layout, is ``harnessfit.core.jsonl.iter_jsonl``; ``BaseTraceReader.json_lines`` turns
its bad records into rejections.)
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from harnessfit.core.ids import content_id
from harnessfit.core.jsonio import sha256_file
from harnessfit.core.jsonl import JsonLine, iter_jsonl
from harnessfit.core.rejection import Reason, Rejection, reject
from harnessfit.errors import UserError

__all__ = [
    "SNIFF_BYTES",
    "MAX_RECORD_BYTES",
    "max_record_bytes",
    "sniff",
    "first_json_line",
    "detection_cache",
    "looks_binary",
    "file_problem",
    "load_json_document",
    "file_sha256",
]

SNIFF_BYTES = 64 * 1024
"""How much a ``detect`` may read from the start of a file."""

MAX_RECORD_BYTES = 16 * 1024 * 1024
"""The most a reader holds whole and parses at once: a JSONL line, or a whole-file JSON document (``.json``,
``.traj``). Anything larger is a ``record_too_large`` rejection and is never loaded (a JSONL line is skipped in
blocks; a document is refused by its size). One limit for both: parsing costs about ten times the bytes in memory,
so a 16 MiB record peaks near 200 MB, where the old 256 MiB document limit let one file take over 3 GB."""

LIMIT_ENV = "HARNESSFIT_MAX_RECORD_BYTES"


def max_record_bytes() -> int:
    """``MAX_RECORD_BYTES``, or the value of ``$HARNESSFIT_MAX_RECORD_BYTES`` (bytes, a positive integer) when set:
    read each time a file is read, so worker processes see it too."""
    raw = os.environ.get(LIMIT_ENV)
    if raw is None or not raw.strip():
        return MAX_RECORD_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise UserError(f"{LIMIT_ENV} must be a positive number of bytes, not {raw!r}")
    return value


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


class _Bounded:
    """A binary file's ``readline`` that reports the end after ``limit`` bytes (so a detector never reads far)."""

    def __init__(self, fh: Any, limit: int) -> None:
        self.fh = fh
        self.left = limit

    def readline(self, size: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        n = self.left if size is None or size < 0 else min(size, self.left)
        line = self.fh.readline(n)
        self.left -= len(line)
        return line


def _first_record(path: Path, max_bytes: int) -> Any:
    with path.open("rb") as fh:
        head = fh.readline(max_bytes + 1)
        try:  # the ordinary JSONL case: the first line is a record
            value = orjson.loads(head)
            if not isinstance(value, list):
                return value
        except orjson.JSONDecodeError:
            pass
        size = path.stat().st_size
        if head.lstrip()[:1] != b"[" and size <= max_bytes:
            # one pretty-printed document (.traj, .json): orjson parses it faster than a scan (a top-level array is
            # scanned instead: only its first element is needed)
            fh.seek(0)
            try:
                value = orjson.loads(fh.read())
            except orjson.JSONDecodeError:
                value = None  # several records (pretty-printed JSONL): scanned below
            if isinstance(value, dict):
                return value
            if isinstance(value, list):
                return value[0] if value else None
        fh.seek(0)
        for item in iter_jsonl(
            _Bounded(fh, max_bytes),
            max_line_bytes=max_bytes,  # type: ignore[arg-type]
            bad_lines="report",
        ):
            return item.value if isinstance(item, JsonLine) else None
    return None


_DETECTING: dict[tuple[str, int], Any] | None = None


@contextmanager
def detection_cache() -> Iterator[None]:
    """While it is open, ``first_json_line`` answers each (path, ``max_bytes``) once: ``registry.detect_format``
    asks every format's detector about the same file in a row, and each would otherwise parse its first record."""
    global _DETECTING
    outer = _DETECTING
    _DETECTING = {} if outer is None else outer
    try:
        yield
    finally:
        _DETECTING = outer


def first_json_line(path: Path, max_bytes: int = 4 * 1024 * 1024) -> Any:
    """The first JSON record of a file, in any layout ``core.jsonl.iter_jsonl`` reads (a line, a pretty-printed
    value, the first element of a top-level array); ``None`` if the first record is not JSON, is over ``max_bytes``,
    or the file is unreadable. Reads at most ``max_bytes``. Inside ``detection_cache`` the value is shared between
    callers: do not change it."""
    key = (str(path), max_bytes)
    if _DETECTING is not None and key in _DETECTING:
        return _DETECTING[key]
    value = None
    try:
        if path.is_file():
            value = _first_record(path, max_bytes)
    except OSError:
        value = None
    if _DETECTING is not None:
        _DETECTING[key] = value
    return value


def file_problem(path: Path, fmt: str, sha256: str = "") -> Rejection | None:
    """File-level checks every reader runs first: unreadable (permission denied, a dangling link, a link loop), empty
    (or blank), binary. ``None`` when fine."""
    try:
        size = path.stat().st_size
        if not path.is_file():  # a FIFO or a device: never opened (a FIFO would block)
            return reject(
                path, Reason.parse_error, "not a regular file", "pass session files only", source=fmt, sha256=sha256
            )
        with path.open("rb") as fh:  # not ``sniff``: an unreadable file must say why
            head = fh.read(8192)
    except OSError as exc:
        dangling = path.is_symlink() and not path.exists() and exc.errno == errno.ENOENT
        why = "a symbolic link whose target does not exist" if dangling else exc.strerror
        return reject(
            path,
            Reason.parse_error,
            f"cannot read file: {why}",
            "fix or remove the link" if path.is_symlink() else "check permissions",
            source=fmt,
            sha256=sha256,
        )
    if size == 0 or (size <= len(head) and not head.strip()):
        return reject(
            path, Reason.empty, "file is empty", "remove the file or re-export the session", source=fmt, sha256=sha256
        )
    if looks_binary(head):
        return reject(
            path,
            Reason.binary_file,
            "file contains NUL bytes (binary, or not UTF-8 text)",
            "pass the JSON/JSONL session file itself (decompress or re-encode as UTF-8)",
            source=fmt,
            sha256=sha256,
        )
    return None


def load_json_document(path: Path, fmt: str, sha256: str = "", *, checked: bool = False) -> Any | Rejection:
    """Load a whole-file JSON document (bounded by ``max_record_bytes()``), or a Rejection saying why not.
    ``checked``: ``file_problem`` already passed for this file (the base reader runs it on every file unit)."""
    problem = None if checked else file_problem(path, fmt, sha256)
    if problem is not None:
        return problem
    try:
        limit = max_record_bytes()
        size = path.stat().st_size
        if size > limit:
            return reject(
                path,
                Reason.record_too_large,
                f"the JSON document is {size} bytes (limit {limit} per record)",
                "split the file into smaller documents",
                source=fmt,
                sha256=sha256,
            )
        with path.open("rb") as fh:  # never more than the limit, even if the file grew since the check
            data = fh.read(limit + 1)
        if len(data) > limit:
            return reject(
                path,
                Reason.record_too_large,
                f"the JSON document is over {limit} bytes (limit {limit} per record)",
                "split the file into smaller documents",
                source=fmt,
                sha256=sha256,
            )
    except OSError as exc:
        return reject(
            path, Reason.parse_error, f"cannot read: {exc.strerror}", "check permissions", source=fmt, sha256=sha256
        )
    try:
        return orjson.loads(data)  # valid UTF-8 is part of orjson's check; the decode below only names the cause
    except orjson.JSONDecodeError as exc:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            return reject(
                path,
                Reason.not_utf8,
                f"invalid UTF-8 at byte {bad.start}",
                "re-encode the file as UTF-8",
                source=fmt,
                sha256=sha256,
            )
        msg = str(exc)
        truncated = "EOF" in msg or "end of" in msg.lower() or getattr(exc, "pos", 0) >= len(data.rstrip()) - 1
        return reject(
            path,
            Reason.truncated_file if truncated else Reason.parse_error,
            f"invalid JSON ({msg[:160]})",
            "the document ends early: re-export it" if truncated else "fix the JSON syntax",
            source=fmt,
            sha256=sha256,
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
