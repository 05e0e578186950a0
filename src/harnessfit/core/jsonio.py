"""JSON helpers used everywhere: compact, key order kept, deterministic bytes; and the one JSONL reader.

``iter_jsonl`` is the only loop over JSONL lines in harnessfit. Its options cover every caller:

- trace readers stream a file line by line with a line-size cap and want each bad line *reported* (as a ``BadLine``
  they turn into a ledger row): ``iter_jsonl(fh, max_line_bytes=…, bad_lines="report")``;
- files harnessfit wrote itself must be valid: ``read_jsonl(path)`` raises on a bad line (``bad_lines="raise"``);
- files a killed process may have cut (an eval episode's event stream) are read tolerantly:
  ``read_jsonl(path, bad_lines="skip", objects_only=True, missing_ok=True)``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import orjson

__all__ = [
    "dumps",
    "dumps_compact_str",
    "loads",
    "write_jsonl",
    "JsonLine",
    "BadLine",
    "iter_jsonl",
    "read_jsonl",
    "sha256_bytes",
    "sha256_file",
]

BadLines = Literal["raise", "skip", "report"]


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes with keys in insertion order (like JavaScript's ``JSON.stringify``)."""
    return orjson.dumps(obj)


def dumps_compact_str(obj: Any) -> str:
    """Compact JSON text, as Pi writes tool-call arguments on the wire."""
    return orjson.dumps(obj).decode("utf-8")


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def write_jsonl(path: Path, rows: Iterable[Any]) -> int:
    """Write one compact JSON object per line; returns the number of rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("wb") as fh:
        for row in rows:
            fh.write(orjson.dumps(row))
            fh.write(b"\n")
            n += 1
    return n


@dataclass(frozen=True, slots=True)
class JsonLine:
    """One parsed JSONL line: ``lineno`` is 1-based, ``value`` the parsed JSON (any type)."""

    lineno: int
    value: Any


@dataclass(frozen=True, slots=True)
class BadLine:
    """A non-blank line that holds no JSON value, and why: ``too_long`` (over ``max_line_bytes``, never held in
    memory), ``not_utf8``, ``invalid_json``, or ``truncated`` (invalid JSON on a last line without a newline: the
    writer stopped mid-record). ``detail`` says it in one line, naming the line number."""

    lineno: int
    kind: Literal["too_long", "not_utf8", "invalid_json", "truncated"]
    detail: str


def iter_jsonl(
    source: Path | IO[bytes], *, max_line_bytes: int | None = None, bad_lines: BadLines = "raise",
) -> Iterator[JsonLine | BadLine]:
    """Every non-blank line of a JSONL file (a path, or a binary file object read from where it is), in order.

    ``bad_lines``: ``"raise"`` re-raises the parse error (``orjson.JSONDecodeError``; ``ValueError`` for a line
    over ``max_line_bytes``), ``"skip"`` leaves bad lines out, ``"report"`` yields a ``BadLine`` for each.
    With ``max_line_bytes`` a longer line is skipped in blocks without being held whole."""
    if isinstance(source, Path):
        with source.open("rb") as fh:
            yield from iter_jsonl(fh, max_line_bytes=max_line_bytes, bad_lines=bad_lines)
        return
    fh = source
    cap = -1 if max_line_bytes is None else max_line_bytes + 1
    lineno = 0
    while True:
        line = fh.readline(cap)
        if not line:
            return
        lineno += 1
        if max_line_bytes is not None and len(line) > max_line_bytes and not line.endswith(b"\n"):
            size = len(line)
            while True:  # skip the rest of the long line in blocks
                more = fh.readline(1 << 20)
                size += len(more)
                if not more or more.endswith(b"\n"):
                    break
            bad = BadLine(lineno, "too_long", f"line {lineno} is {size} bytes (limit {max_line_bytes} per record)")
            if bad_lines == "raise":
                raise ValueError(bad.detail)
            if bad_lines == "report":
                yield bad
            continue
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)  # orjson accepts only valid UTF-8, so a parsed line needs no decode check
        except orjson.JSONDecodeError as exc:
            if bad_lines == "raise":
                raise
            if bad_lines == "report":
                yield _bad_line(lineno, line, exc)
            continue
        yield JsonLine(lineno, value)


def _bad_line(lineno: int, line: bytes, exc: orjson.JSONDecodeError) -> BadLine:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        return BadLine(lineno, "not_utf8", f"line {lineno}: invalid UTF-8 at byte {bad.start}")
    last = not line.endswith(b"\n")  # readline only stops without a newline at end of file
    return BadLine(lineno, "truncated" if last else "invalid_json", f"line {lineno}: invalid JSON ({str(exc)[:120]})")


def read_jsonl(
    path: Path, *, bad_lines: Literal["raise", "skip"] = "raise", objects_only: bool = False, missing_ok: bool = False,
) -> Iterator[Any]:
    """The JSON value of every non-blank line. ``bad_lines="skip"`` leaves broken lines out instead of raising;
    ``objects_only`` keeps only JSON objects; ``missing_ok`` reads a missing file as empty."""
    if missing_ok and not path.is_file():
        return
    for item in iter_jsonl(path, bad_lines=bad_lines):
        if not objects_only or isinstance(item.value, dict):  # type: ignore[union-attr]
            yield item.value  # type: ignore[union-attr]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
