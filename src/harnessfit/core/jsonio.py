"""JSON helpers used everywhere: compact, key order kept, deterministic bytes; JSONL writing, reading back what
harnessfit wrote (``read_jsonl``, on the one JSONL reader ``core.jsonl.iter_jsonl``), and file hashes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

import orjson

from harnessfit.core.jsonl import iter_jsonl

__all__ = [
    "dumps",
    "dumps_compact_str",
    "loads",
    "write_jsonl",
    "read_jsonl",
    "read_json_object",
    "sha256_bytes",
    "sha256_file",
]


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes with keys in insertion order (like JavaScript's ``JSON.stringify``)."""
    return orjson.dumps(obj)


def dumps_compact_str(obj: Any) -> str:
    """Compact JSON text, as Pi writes tool-call arguments on the wire."""
    return orjson.dumps(obj).decode("utf-8")


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object a file holds, or None when it is missing, unreadable, not JSON or not an object (a stage's
    metadata file read by another stage, which must not stop on it)."""
    try:
        value = loads(Path(path).read_bytes())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


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


def read_jsonl(
    path: Path,
    *,
    bad_lines: Literal["raise", "skip"] = "raise",
    objects_only: bool = False,
    missing_ok: bool = False,
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
