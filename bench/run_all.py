"""Run every benchmark one after another and print one JSON summary (``make bench``).

Default sizes are small enough for a laptop or a shared CI box (a few minutes in all); ``--full`` uses the sizes the
issues ask for (500 MiB corpora, the real model shapes when a GPU is present). Benches run sequentially, each in its
own process, never in parallel (they measure speed). Nothing is written to disk: the summary goes to stdout only.
Each entry holds the bench's own JSON (``result``), its exit code and wall seconds, and the machine's load average
before and after (a loaded machine makes wall-clock numbers slower; the convert and build benches also report CPU
seconds). Exit status: 0 when every bench ran, 1 when one crashed — a missed speed target is reported in the JSON,
not as a failure of this script.

    python bench/run_all.py                    # small sizes
    python bench/run_all.py --full             # 500 MiB corpora, GPU shapes where a GPU exists
    python bench/run_all.py --only convert build
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def plans(full: bool) -> dict[str, list[str]]:
    """Bench name → its command-line arguments."""
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    return {
        "corpus_check": ["corpus.py", "--check"],
        "redaction_recall": ["redaction_recall.py"],
        "convert": ["convert_throughput.py", "--mb", *(["100", "500"] if full else ["10", "50"])],
        "build": ["build_throughput.py", "--mb", "500" if full else "20"],
        "pi_branches": ["pi_branches.py"],
        "audit": ["audit_throughput.py", *([] if full else ["--convs", "4"])],
        "train": ["train_throughput.py", *(["--device", "cuda"] if full and gpu else ["--device", "cpu", "--shape", "tiny"])],
        "train_tokens": ["train_tokens.py", *([] if full else ["--no-train", "--no-audit-compare"])],
        "train_cpu_step": ["train_cpu_step.py", *([] if full else ["--steps", "1"])],
    }


def _json_from(stdout: str) -> object:
    """The bench's JSON object: the whole output, or from the first line that starts with '{'."""
    try:
        return json.loads(stdout)
    except ValueError:
        pass
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("{"):
            try:
                return json.JSONDecoder().raw_decode("\n".join(lines[i:]))[0]
            except ValueError:
                continue
    raise ValueError("no JSON object in the output")


def _targets(name: str, result: dict) -> dict:
    """The pass/fail part of a bench's JSON (each bench words it its own way)."""
    if "targets" in result:
        return result["targets"]
    if name == "corpus_check":
        return {"copies_convert_like_originals": {"pass": all(c["same_reasons_as_original"] for c in result["copies"])}}
    if name == "train":
        return {r["shape"]: {"ratio_vs_stock_best": r.get("ratio_vs_stock_best"),
                             "note": "GPU targets (>= 2.5x on an H200) are judged only on a GPU run"}
                for r in result.get("results", [])}
    return {k: v for k, v in result.items() if k.startswith("meets") or k.startswith("target")}


def run(name: str, args: list[str]) -> dict:
    load_before = os.getloadavg()
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, str(HERE / args[0]), *args[1:]], capture_output=True, text=True)
    entry: dict = {"command": " ".join(["bench/" + args[0], *args[1:]]), "rc": proc.returncode,
                   "wall_s": round(time.perf_counter() - t, 1), "load_avg_before": [round(x, 2) for x in load_before],
                   "load_avg_after": [round(x, 2) for x in os.getloadavg()]}
    try:
        entry["result"] = _json_from(proc.stdout)
    except ValueError:
        entry["result"] = None
    if proc.returncode != 0 or entry["result"] is None:
        entry["error_tail"] = (proc.stderr or proc.stdout)[-2000:]
    return entry


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="the sizes the issues ask for (slow: tens of minutes)")
    ap.add_argument("--only", nargs="+", default=None, help="run only these benches (names as in the summary)")
    args = ap.parse_args(argv)
    todo = plans(args.full)
    if args.only:
        unknown = sorted(set(args.only) - set(todo))
        if unknown:
            ap.error(f"unknown bench {unknown}; choose from {sorted(todo)}")
        todo = {k: v for k, v in todo.items() if k in args.only}
    results = {}
    for name, cmd in todo.items():
        print(f"bench {name}: {' '.join(cmd)}", file=sys.stderr, flush=True)
        results[name] = run(name, cmd)
    targets = {name: _targets(name, r["result"]) for name, r in results.items() if isinstance(r["result"], dict)}
    print(json.dumps({"full": args.full, "cpus": os.cpu_count(), "benches": results, "targets": targets}, indent=1))
    return 0 if all(r["rc"] == 0 and r["result"] is not None for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
