"""Dataset-build throughput on a replicated corpus: seconds per stage, end-to-end MB/s, and the cost of redaction +
dedup relative to conversion. Prints JSON (a benchmark, not a test).

    python bench/build_throughput.py --mb 500 --workers 1 [--corpus /tmp/corpus] [--out /tmp/build-bench]

The corpus is made by ``bench/corpus.py`` (copies of ../shared/traces with renewed ids). Copies convert to the same
content, so dedup drops them as exact duplicates and export stays the size of one copy; conversion, redaction and
dedup hashing run over every copy. A baseline is measured in the same run: plain conversion (``iter_convert``
alone, no build stages) over the same corpus.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=500.0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--corpus", type=Path, default=Path("/tmp/harnessfit-build-corpus"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/harnessfit-build-bench"))
    ap.add_argument("--no-parquet", action="store_true")
    ap.add_argument("--skip-baseline", action="store_true")
    args = ap.parse_args(argv)

    from corpus import build_corpus

    from harnessfit.convert.runner import iter_convert
    from harnessfit.dataset.build import build_dataset
    from harnessfit.dataset.config import config_from_values
    from harnessfit.harness.card import load_card

    traces = ROOT.parent / "shared" / "traces"
    info = build_corpus(traces, args.corpus, args.mb)
    card = load_card()
    baseline = None
    if not args.skip_baseline:
        t = time.perf_counter()
        n = sum(1 for _ in iter_convert([args.corpus], card, workers=args.workers))
        baseline = {"items": n, "seconds": round(time.perf_counter() - t, 3)}
    if args.out.exists():
        shutil.rmtree(args.out)
    cfg = config_from_values(inputs=[str(args.corpus)], workers=args.workers, parquet=not args.no_parquet)
    t = time.perf_counter()
    rep = build_dataset(cfg, Path.cwd(), out=args.out)
    total = time.perf_counter() - t
    mb = rep.input_bytes / 1e6
    s = rep.seconds
    out_bytes = sum(o["bytes"] for o in rep.manifest["outputs"])
    result = {
        "corpus": info, "input_mb": round(mb, 2), "workers": args.workers, "parquet": not args.no_parquet,
        "seconds_per_stage": s, "end_to_end_seconds": round(total, 3), "end_to_end_mb_per_s": round(mb / total, 3),
        "redact_plus_dedup_over_convert": round((s.get("redact", 0) + s.get("dedup", 0)) / max(s.get("convert", 1e-9), 1e-9), 3),
        "baseline_convert_only": baseline, "counts": rep.manifest["counts"], "output_mb": round(out_bytes / 1e6, 2),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
