"""JSON helpers used everywhere: compact, key order kept, deterministic bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

__all__ = ["dumps", "dumps_compact_str", "loads", "write_jsonl", "read_jsonl", "sha256_bytes", "sha256_file"]


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


def read_jsonl(path: Path) -> Iterator[Any]:
    with path.open("rb") as fh:
        for line in fh:
            if line.strip():
                yield orjson.loads(line)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()
