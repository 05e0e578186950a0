"""Build a large trace corpus by replicating ../shared/traces with new ids (a benchmark input, never committed).

Every UUID-looking string in a copy is replaced by a UUID derived from (copy number, original), so each copy has
new session/message ids and a new SHA-256 — it converts to distinct trajectories, like a real fleet of sessions.
Folder units (OpenHands V1) are copied as folders. ``SOURCES.md`` is left out.

    python bench/corpus.py --mb 500 --out /tmp/corpus        # prints JSON: files, bytes, copies
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import uuid
from pathlib import Path

__all__ = ["build_corpus"]

_UUID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NS = uuid.UUID("6f1c3b1e-1d7e-4a8b-9c55-2d6b8a0e7f10")


def _renew(data: bytes, copy: int) -> bytes:
    return _UUID.sub(lambda m: str(uuid.uuid5(_NS, f"{copy}:{m.group(0).decode()}")).encode(), data)


def _sources(traces: Path) -> list[Path]:
    out = []
    for p in sorted(traces.rglob("*")):
        if p.is_file() and p.name != "SOURCES.md":
            out.append(p)
    return out


def build_corpus(traces: Path, out: Path, target_mb: float) -> dict:
    """Copy the traces (with renewed ids) into ``out/copy-NNNNN/…`` until the corpus reaches ``target_mb``."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    files = [(p, p.relative_to(traces), p.read_bytes()) for p in _sources(traces)]
    one = sum(len(d) for _, _, d in files)
    target = int(target_mb * 1024 * 1024)
    total = copies = count = 0
    while total < target:
        base = out / f"copy-{copies:05d}"
        for _, rel, data in files:
            dest = base / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            new = _renew(data, copies)
            dest.write_bytes(new)
            total += len(new)
            count += 1
        copies += 1
    return {"out": str(out), "copies": copies, "files": count, "bytes": total, "bytes_per_copy": one}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0, help="target corpus size in MB")
    ap.add_argument("--out", type=Path, required=True, help="output folder (replaced)")
    ap.add_argument("--traces", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "traces")
    args = ap.parse_args(argv)
    print(json.dumps(build_corpus(args.traces, args.out, args.mb)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
