"""Loop or content? The same tasks answered directly (no harness) by the base and the tuned model of a finished run.

``bench/training_effect.py`` (or ``make demo``) leaves a run folder: the tuned adapter (``train/adapter``), the
generated tasks (``tasks/train``, ``tasks/heldout``) and the agent evals in the real Pi (``eval/…``). This bench
answers the run's suites with ``harnessfit eval direct`` — each task's prompt and files handed over in one message,
the new files asked for, the task's own checker as judge, nothing run for the model — for the base model (the
baseline, same run) and the tuned one, and prints them next to the run's in-Pi figures:

- the default suite and the held-out families, as the run evaluated them;
- ``--train-per-family`` instances of every training family (the content SFT saw, other instances).

A task the base model cannot write even when handed everything is a task whose change an agent built on it must
learn; where the tuned model's direct answers are worse than the base's, the adapter has cost plain chat.

    .venv/bin/python bench/direct_ceiling.py --run /tmp/effect > bench/results/direct_ceiling-$(date +%F).json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path


def _train_sample(run: Path, per_family: int, into: Path) -> Path | None:
    """A suite of the first ``per_family`` training tasks of each family (with its manifest), or None."""
    manifest = run / "tasks" / "train" / "tasks.json"
    if per_family < 1 or not manifest.is_file():
        return None
    data = json.loads(manifest.read_text())
    seen: dict[str, int] = {}
    keep = []
    for row in sorted(data["tasks"], key=lambda r: r["id"]):
        if seen.get(row["family"], 0) < per_family:
            seen[row["family"]] = seen.get(row["family"], 0) + 1
            keep.append(row)
            shutil.copytree(run / "tasks" / "train" / row["id"], into / row["id"])
    (into / "tasks.json").write_text(json.dumps({**data, "tasks": keep}))
    return into


def _in_pi(run: Path, name: str) -> dict | None:
    path = run / "eval" / name / "results.json"
    if not path.is_file():
        return None
    rates = json.loads(path.read_text())["aggregates"]["rates"]
    return {k: rates[k] for k in ("complete_loop", "checker_passed", "expected_change") if k in rates}


def measure(run: Path, *, max_tokens: int = 384, train_per_family: int = 1, out: Path | None = None) -> dict:
    """Direct answers of the run's base and tuned model on its suites, beside the run's in-Pi figures."""
    from harnessfit.eval.direct import run_direct
    from harnessfit.eval.run import default_suite

    adapter = run / "train" / "adapter"
    out = out or run / "direct"
    facts = json.loads((run / "facts.json").read_text()) if (run / "facts.json").is_file() else {}
    model = facts.get("plan", {}).get("model", "smollm2-135m")
    result: dict = {"bench": "direct_ceiling", "run": str(run), "model": model, "max_tokens": max_tokens,
                    "direct": {}, "seconds": {}}
    with tempfile.TemporaryDirectory(prefix="bench_direct_") as tmp:
        suites = {"default": default_suite(), "heldout": run / "tasks" / "heldout"}
        sample = _train_sample(run, train_per_family, Path(tmp) / "train-sample")
        if sample is not None:
            suites["train_sample"] = sample
        suites = {k: v for k, v in suites.items() if v.is_dir()}
        for who, extra in (("base", {}), ("tuned", {"adapter": adapter})):
            result["direct"][who] = {}
            for name, suite in suites.items():
                t0 = time.perf_counter()
                with contextlib.redirect_stdout(sys.stderr):
                    res = run_direct(model, suite, out / who / name, max_tokens=max_tokens, progress=False, **extra)
                agg = res.aggregates
                result["direct"][who][name] = {"answers": agg["answers"], "scored": agg["scored"], **agg["rates"],
                                               "stopped_at_token_cap": agg["stopped_at_token_cap"],
                                               "per_family": agg["per_family"]}
                result["seconds"][f"{who} {name}"] = round(time.perf_counter() - t0, 1)
    result["in_pi"] = {f"{who} {name}": _in_pi(run, folder) for who in ("base", "tuned")
                       for name, folder in (("default", who), ("heldout", f"{who}-heldout"))}
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, required=True, help="finished training_effect / demo run folder")
    ap.add_argument("--max-tokens", type=int, default=384, help="output cap per direct answer")
    ap.add_argument("--train-per-family", type=int, default=1, help="training-family instances per family (0: none)")
    ap.add_argument("--out", type=Path, default=None,
                    help="where the direct results go (default: RUN/direct, which `harnessfit report RUN` shows)")
    a = ap.parse_args()
    if not (a.run / "train" / "adapter").is_dir():
        sys.exit(f"{a.run}: no train/adapter (not a finished run)")
    print(json.dumps(measure(a.run, max_tokens=a.max_tokens, train_per_family=a.train_per_family, out=a.out),
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
