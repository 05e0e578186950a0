"""Pi reader on branchy sessions: seconds to read a session a user kept regenerating (one discarded answer per
turn, so each side branch's root→leaf path is as long as its turn), at 500, 1,000 and 2,000 side branches. Prints one
JSON object.

Baseline (same run): the old way, which built every side branch's root→leaf path and Pi's context over it only for
the gate to reject it. It is quadratic, so it runs only up to ``--baseline-max`` branches (default 500: ~10 s; 2,000
took over 200 s). Target (issue 20 item 14): 2,000 branches in a few seconds.

    python bench/pi_branches.py
    python bench/pi_branches.py --branches 500 1000 2000 4000 --baseline-max 1000
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the session generator the tests use (one definition)

from _helpers.pi_sessions import branchy_session  # noqa: E402

from harnessfit.core import Rejection, Trajectory  # noqa: E402
from harnessfit.formats.pi.reader import PiReader  # noqa: E402

TARGET_S_AT_2000 = 5.0


def _old_way(path: Path) -> int:
    """What the reader did before: the root→leaf path and the context of every leaf, side branches included."""
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    by_id = {e["id"]: (k + 2, e) for k, e in enumerate(entries)}
    parent = {e["id"]: e.get("parentId") for e in entries}
    children = {p for p in parent.values() if p is not None}
    ids = list(by_id)
    leaves = [ids[-1]] + [e for e in ids if e not in children and e != ids[-1]]
    steps = 0
    for leaf in leaves:
        path_ids, cur = [], leaf
        while cur is not None:
            path_ids.append(cur)
            cur = parent.get(cur)
        path_ids.reverse()
        steps += len(PiReader._context(path_ids, by_id)[0])
    return steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--branches", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--baseline-max", type=int, default=500, help="run the old way up to this many branches")
    args = ap.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="hf-pi-branches-") as tmp:
        for n in args.branches:
            path = branchy_session(n).write(Path(tmp) / f"b{n}.jsonl")
            t0 = time.perf_counter()
            records = list(PiReader().read(path))
            now = time.perf_counter() - t0
            row = {"branches": n, "bytes": path.stat().st_size, "seconds": round(now, 3),
                   "trajectories": sum(isinstance(r, Trajectory) for r in records),
                   "side_branch_rows": sum(isinstance(r, Rejection) for r in records)}
            if n <= args.baseline_max:
                t0 = time.perf_counter()
                _old_way(path)
                row["baseline_seconds"] = round(time.perf_counter() - t0, 3)
                row["speedup"] = round(row["baseline_seconds"] / max(now, 1e-6), 1)
            runs.append(row)
    at = {r["branches"]: r["seconds"] for r in runs}
    out = {"bench": "pi_branches", "runs": runs,
           "targets": {"seconds_at_2000": {"value": at.get(2000), "max": TARGET_S_AT_2000,
                                           "pass": at[2000] <= TARGET_S_AT_2000 if 2000 in at else None}}}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
