"""Build a large trace corpus by replicating ../shared/traces with new ids and varied content (a benchmark input,
never committed).

Each copy differs from every other copy in two deterministic ways:

* **ids**: every UUID-looking string is replaced by a UUID derived from (seed, copy number, original), so sessions
  and messages get new ids and each file a new SHA-256;
* **content**: in every JSON string *value* (keys are left alone), the first space-bounded small word
  (``the a an and to of in is for on``) gets a short letters-only tag unique to the copy (``the`` → ``thekqz``).
  That varies about one token per user prompt, assistant text, tool argument and tool output, so no copy is a
  byte-level or normalised-text duplicate of another: the build cannot pre-mark copies as raw duplicates and skip
  redaction/dedup on them. Copies stay *near* duplicates of each other (a few shingles differ per message), as
  re-runs of the same task are in a real fleet; near-dedup is expected to drop most of them.

The tags are letters only (no entropy spike for the secret scanner) and never touch JSON keys, enum strings without
spaces, tool names, paths, base64 data, patch/exit-code keywords, or a text Pi itself writes into a tool result
(``Successfully wrote N bytes to P``, a read's continuation notice: ``harness.pi_texts.authored_start``; a real Pi
never writes a tagged wording, so a tagged one would be converted as an unknown text). Conversations with no such word (e.g. a prompt
that was replaced by ``[REDACTED_PROMPT]``, or text without ASCII small words) stay identical across copies.
Folder units (OpenHands V1) are copied as folders. ``SOURCES.md`` is left out. Output is a pure function of
(traces, target size, seed).

    python bench/corpus.py --mb 500 --out /tmp/corpus        # prints JSON: files, bytes, copies
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import string
import sys
import uuid
from itertools import product
from pathlib import Path

__all__ = ["build_corpus", "copy_tag", "DEFAULT_TRACES"]

DEFAULT_TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "traces"
_UUID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NS = uuid.UUID("6f1c3b1e-1d7e-4a8b-9c55-2d6b8a0e7f10")
# a JSON string literal (one line: JSON strings cannot hold raw newlines); scanned in order from the start so
# the matches stay aligned with the real strings; a literal followed by ':' is a key and is skipped
_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
_KEY_AFTER = re.compile(rb"\s*:")
_WORD = re.compile(rb" (the|a|an|and|to|of|in|is|for|on)(?= )")


def copy_tag(copy: int, seed: int = 0) -> str:
    """A short letters-only tag unique to ``copy`` (a seeded permutation of 3-, then 4-letter words)."""
    letters = string.ascii_lowercase
    for width in (3, 4, 5):
        pool = ["".join(t) for t in product(letters, repeat=width)]
        if copy < len(pool):
            random.Random(f"{seed}:{width}").shuffle(pool)
            return pool[copy]
        copy -= len(pool)
    raise ValueError("too many copies")


def _untouchable(raw: bytes) -> int:
    """How much of a JSON string literal may be tagged: up to where the text Pi writes in it begins (all of it
    when Pi writes none)."""
    if b"Successfully" not in raw and b"continue" not in raw and b"Could not" not in raw:  # cheap pre-check
        return len(raw)
    from harnessfit.harness.card import load_card
    from harnessfit.harness.pi_texts import authored_start

    try:
        text = json.loads(raw)
    except ValueError:
        return len(raw)
    start = authored_start(load_card(), text) if isinstance(text, str) else None
    if start is None:
        return len(raw)
    at = raw.rfind(json.dumps(text[start:], ensure_ascii=False)[1:-1].encode()) if start else 1
    return at if at >= 0 else 0


def _template(data: bytes) -> tuple[list[bytes], list[tuple[str, bytes]]]:
    """Split ``data`` into literal chunks and the slots between them: ("uuid", original) or ("tag", b"")."""
    slots: list[tuple[int, int, str, bytes]] = [(m.start(), m.end(), "uuid", m.group(0)) for m in _UUID.finditer(data)]
    for m in _STRING.finditer(data):
        if _KEY_AFTER.match(data, m.end()):
            continue
        w = _WORD.search(m.group(0), 0, _untouchable(m.group(0)))
        if w is not None:
            pos = m.start() + w.end()  # right after the word: the tag is appended to it
            slots.append((pos, pos, "tag", b""))
    slots.sort(key=lambda s: (s[0], s[1]))
    chunks, kinds, at = [], [], 0
    for start, end, kind, orig in slots:
        if start < at:  # overlap (cannot happen: UUIDs hold no spaces); keep the earlier slot
            continue
        chunks.append(data[at:start])
        kinds.append((kind, orig))
        at = end
    chunks.append(data[at:])
    return chunks, kinds


def _render(chunks: list[bytes], kinds: list[tuple[str, bytes]], copy: int, seed: int) -> bytes:
    tag = copy_tag(copy, seed).encode()
    ids: dict[bytes, bytes] = {}
    out = [chunks[0]]
    for (kind, orig), chunk in zip(kinds, chunks[1:]):
        if kind == "uuid":
            new = ids.get(orig)
            if new is None:
                new = ids[orig] = str(uuid.uuid5(_NS, f"{seed}:{copy}:{orig.decode()}")).encode()
            out.append(new)
        else:
            out.append(tag)
        out.append(chunk)
    return b"".join(out)


def _sources(traces: Path) -> list[Path]:
    return [p for p in sorted(traces.rglob("*")) if p.is_file() and p.name != "SOURCES.md"]


def build_corpus(traces: Path, out: Path, target_mb: float, seed: int = 0) -> dict:
    """Copy the traces (renewed ids, varied content) into ``out/copy-NNNNN/…`` until the corpus reaches
    ``target_mb`` MiB. Returns counts (copies, files, bytes, varied tokens per copy)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    files = []
    for p in _sources(traces):
        chunks, kinds = _template(p.read_bytes())
        files.append((p.relative_to(traces), chunks, kinds))
    one = sum(len(b"".join(c)) for _, c, _ in files)
    target = int(target_mb * 1024 * 1024)
    total = copies = count = 0
    while total < target:
        base = out / f"copy-{copies:05d}"
        for rel, chunks, kinds in files:
            dest = base / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            new = _render(chunks, kinds, copies, seed)
            dest.write_bytes(new)
            total += len(new)
            count += 1
        copies += 1
    return {"out": str(out), "copies": copies, "files": count, "bytes": total, "bytes_per_copy": one, "seed": seed,
            "varied_tokens_per_copy": sum(k == "tag" for _, _, ks in files for k, _ in ks),
            "uuids_per_copy": sum(k == "uuid" for _, _, ks in files for k, _ in ks)}


def check_variation(traces: Path, copies: int = 3, seed: int = 0) -> dict:
    """Convert the originals and ``copies`` copies: per-file accept/reject reasons must match the originals, and
    report how many accepted conversations are still exact (normalised-text) duplicates of the original's."""
    import tempfile
    from collections import Counter

    from harnessfit.core.conversation import Conversation
    from harnessfit.convert.units import iter_convert
    from harnessfit.dataset.dedup import exact_key, normalised_text
    from harnessfit.harness.card import load_card

    card = load_card()

    def outcomes(root: Path) -> tuple[Counter, set[str], int]:
        reasons: Counter = Counter()
        keys: set[str] = set()
        for item in iter_convert([root], card):
            name = (item.meta if isinstance(item, Conversation) else item).file.split("/", 1)[-1]  # drop the root
            if name == "SOURCES.md":
                continue
            reasons[(name, "accepted" if isinstance(item, Conversation) else str(item.reason))] += 1
            if isinstance(item, Conversation):
                keys.add(exact_key(normalised_text(item)))
        return reasons, keys, sum(v for (_, r), v in reasons.items() if r == "accepted")

    base_reasons, base_keys, accepted = outcomes(traces)
    out = {"accepted_per_copy": accepted, "copies": []}
    one = sum(p.stat().st_size for p in _sources(traces))
    with tempfile.TemporaryDirectory(prefix="hf-corpus-check-") as tmp:
        build_corpus(traces, Path(tmp), copies * one / 2**20, seed)  # tags make each copy a bit larger: `copies` copies
        for i in range(copies):
            reasons, keys, _ = outcomes(Path(tmp) / f"copy-{i:05d}")
            out["copies"].append({"copy": i, "same_reasons_as_original": reasons == base_reasons,
                                  "accepted_still_identical_to_original": len(keys & base_keys)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0, help="target corpus size in MiB")
    ap.add_argument("--out", type=Path, help="output folder (replaced)")
    ap.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true", help="instead: check that copies convert like the originals")
    args = ap.parse_args(argv)
    if args.check:
        print(json.dumps(check_variation(args.traces, seed=args.seed)))
        return 0
    if args.out is None:
        ap.error("--out is required")
    print(json.dumps(build_corpus(args.traces, args.out, args.mb, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
