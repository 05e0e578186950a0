"""Several sampled tries per task: a finished run's base and tuned model again in the real Pi, ``--seeds`` episodes per
task at the eval's sampling temperature (0.7 for several seeds), beside the run's own greedy figures.

``bench/training_effect.py`` evaluates one greedy episode per task (at greedy decoding further seeds repeat it), so
its nine default-suite and nine held-out tasks give intervals 30 to 50 points wide. This bench takes the run folder
it left (``train/adapter``, ``tasks/heldout``, ``facts.json``) and runs ``harnessfit eval agent``'s ``run_eval`` for
the base model (the baseline, same run) and the tuned adapter on the default suite and the held-out families with
``--seeds`` sampled episodes per task, each task's own turn and time limits, and the run's output cap. Prints one
JSON object: per model and suite the same rates as ``training_effect.py`` (``complete_loop`` …, 95% Wilson
intervals over every episode), pass@k over the seeds, the tasks solved at least once, and the greedy figures of
the run for comparison.

    .venv/bin/python bench/sampled_seeds.py --run /tmp/effect --seeds 3 > bench/results/sampled_seeds-$(date +%F).json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

from training_effect import summarize  # bench/ is the script's folder, so it is on sys.path


def _solved(res) -> list[str]:
    """Tasks with at least one complete loop (``res``: the run's ``EvalResults``)."""
    return sorted({e.facts.task_id for e in res.episodes if e.metrics is not None and e.metrics.complete_loop})


def measure(run: Path, *, seeds: int, temperature: float | None = None, out: Path | None = None) -> dict:
    """Base and tuned of ``run`` with ``seeds`` sampled episodes per task on the default suite and the held-out tasks."""
    from harnessfit.eval.run import default_suite, run_eval

    facts = json.loads((run / "facts.json").read_text())
    plan = facts["plan"]
    model = plan.get("model", "smollm2-135m")
    max_tokens = int(plan.get("serve_max_tokens") or 160)
    out = out or run / f"eval-{seeds}-seeds"
    suites = {"default": default_suite(), "heldout": run / "tasks" / "heldout"}
    result: dict = {"bench": "sampled_seeds", "run": str(run), "model": model, "seeds": seeds,
                    "max_tokens": max_tokens, "models": {}, "seconds": {}}
    for who, extra in (("base", {}), ("tuned", {"adapter": run / "train" / "adapter"})):
        result["models"][who] = {}
        for name, suite in suites.items():
            if not suite.is_dir():
                continue
            tag = "" if name == "default" else f"-{name}"  # the run's own eval folders are named the same way
            folder = out / f"{who}{tag}"
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(sys.stderr):
                res = run_eval(model, suite, folder, seeds=seeds, workers=2, temperature=temperature,
                               max_tokens=max_tokens, threads=1, tokenizer=run / "audit" / "tokenizer",
                               model_id=f"{model}-{who}", progress=False, **extra)
            result["temperature"] = res.config["temperature"]
            greedy = run / "eval" / f"{who}{tag}" / "results.json"
            result["models"][who][name] = {
                **summarize(folder / "results.json"),
                "pass_at_k": res.aggregates.get("pass_at_k"),
                "tasks_solved_at_least_once": _solved(res),
                "greedy_in_the_run": summarize(greedy) if greedy.is_file() else None,
            }
            result["seconds"][f"{who} {name}"] = round(time.perf_counter() - t0, 1)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, required=True, help="finished training_effect / demo run folder")
    ap.add_argument("--seeds", type=int, default=3, help="sampled episodes per task and model")
    ap.add_argument("--temperature", type=float, default=None, help="default: the eval's rule (0.7 for several seeds)")
    ap.add_argument("--out", type=Path, default=None, help="where the eval folders go (default: RUN/eval-N-seeds)")
    a = ap.parse_args()
    if not (a.run / "train" / "adapter").is_dir() or not (a.run / "facts.json").is_file():
        sys.exit(f"{a.run}: no train/adapter or facts.json (not a finished run)")
    t0 = time.perf_counter()
    result = measure(a.run, seeds=a.seeds, temperature=a.temperature, out=a.out)
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
