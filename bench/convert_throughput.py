"""Convert throughput and memory: MB/s and trajectories/s with 1 and 2 workers, peak RSS, identical output bytes.

Each run is a fresh subprocess (so peak RSS is that run's own); peak RSS is the largest single process (parent or
worker). Prints one JSON object. Not a test.

    python bench/convert_throughput.py --mb 500 [--corpus DIR] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

_RUN = """
import json, resource, sys, time
from harnessfit.convert import convert
from harnessfit.harness.card import load_card
card = load_card("pi", "0.73.1")
t = time.perf_counter()
s = convert([sys.argv[1]], sys.argv[2], card, workers=int(sys.argv[3]))
wall = time.perf_counter() - t
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
ru_s, ru_c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru_s.ru_utime + ru_s.ru_stime + ru_c.ru_utime + ru_c.ru_stime
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "read": s.read, "accepted": s.accepted, "rejected": s.rejected,
                  "peak_rss_mb": max(own, kids) / 1024}))
"""


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for name in ("conversations.jsonl", "ledger.jsonl", "ledger_summary.md", "accounting.json"):
        h.update(name.encode())
        with (folder / name).open("rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--corpus", type=Path, default=None, help="reuse a corpus built by bench/corpus.py")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from corpus import build_corpus

    with tempfile.TemporaryDirectory(prefix="hf-bench-") as tmp:
        corpus = args.corpus or Path(tmp) / "corpus"
        info = build_corpus(HERE.parent.parent / "shared" / "traces", corpus, args.mb) if args.corpus is None else {
            "bytes": sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file())}
        mb = info["bytes"] / (1024 * 1024)
        runs = []
        digests = set()
        for w in args.workers:
            out = Path(tmp) / f"out-w{w}"
            proc = subprocess.run([sys.executable, "-c", _RUN, str(corpus), str(out), str(w)], capture_output=True,
                                  text=True, check=True)
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            r.update(workers=w, mb_per_s=mb / r["wall_s"], mb_per_cpu_s=mb / r["cpu_s"], trajectories_per_s=r["read"] / r["wall_s"])
            digests.add(_digest(out))
            runs.append(r)
        base = runs[0]["wall_s"]
        for r in runs:
            r["speedup_vs_first"] = base / r["wall_s"]
        print(json.dumps({"corpus_mb": round(mb, 1), "runs": runs, "identical_output": len(digests) == 1}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
