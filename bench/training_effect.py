"""Learning per CPU minute, measured in the real harness: does SFT on task-family data teach the embedded model to act?

The demo pipeline (``harnessfit.demo.run_demo``) at a larger size: ``--per-kind`` distinct tasks of each kind (edit,
recover, create), spread over the *training* task families (``harnessfit tasks list``), are generated and recorded by
the golden solver through the real Pi; the build + audit turn the sessions into chains, the demo recipe fine-tunes
SmolLM2-135M on them (CPU), and base and tuned are evaluated through the real Pi with each task's own turn and time
limits on the *default* suite (``examples/tasks/default``, ``--seeds`` seeds each) and on ``--heldout-instances``
instances of every *held-out* family — neither ever trained on. Prints one JSON object: per model and suite the
rates with 95% Wilson intervals (named as in the eval results: ``complete_loop``, ``expected_change`` …), the
valid-call rate, what training read and saw, and the seconds of every step. Budget: ≤ 60 minutes on 2 quiet cores.

    .venv/bin/python bench/training_effect.py --out /tmp/effect > bench/results/training_effect-$(date +%F).json
    .venv/bin/python bench/training_effect.py --from-run out/demo   # the same JSON from a finished demo folder

``--model SPEC`` trains and evaluates another base model (a local folder or a cached Hugging Face id, with a recipe
that fits it, e.g. ``--recipe examples/recipes/qwen3-0.6b.yaml`` on a GPU); the embedded SmolLM2-135M is the default.

``--direct`` then answers the run's suites without the harness (``bench/direct_ceiling.py``): loop or content?
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

from harnessfit.eval.stats import rate

RATES = ("complete_loop", "expected_change", "validation_used", "final_validation_clean", "finished_with_response",
         "checker_passed", "turn_cap_hit", "runaway", "repeated_failed_call")


def summarize(results_path: Path) -> dict:
    """Rates of one eval run, plus the episodes in which Pi ran at least one of the model's tool calls."""
    from harnessfit.eval.results import load_results

    res = load_results(results_path)
    agg = res.aggregates
    scored = [e for e in res.episodes if e.metrics is not None]
    ran = sum(1 for e in scored if e.metrics.tool_calls_valid > 0)
    return {"episodes": agg["episodes"], "scored": agg["scored"],
            **{k: agg["rates"][k] for k in RATES if k in agg["rates"]},  # runs older than a metric lack it
            "valid_tool_calls": agg["tool_calls"]["valid_rate"],
            "tool_calls_total": agg["tool_calls"]["total"],
            "episodes_with_a_tool_call_pi_ran": rate(ran, len(scored)).as_dict(),
            "failures": agg.get("failures", {}), "mean_turns": agg.get("means", {}).get("turns")}


def run_summary(out: Path, plan: dict, wall_s: float | None = None) -> dict:
    """The bench's JSON from a finished demo-shaped run folder (``facts.json`` and ``eval/{base,tuned}[-heldout]``)."""
    facts = json.loads((out / "facts.json").read_text())
    train = facts["train"]
    heldout = {name: summarize(out / "eval" / f"{name}-heldout" / "results.json") for name in ("base", "tuned")
               if (out / "eval" / f"{name}-heldout" / "results.json").is_file()}
    return {
        "bench": "training_effect",
        "plan": {**plan, "recipe": facts["plan"]["recipe"]},
        "tasks": facts.get("tasks"),
        "synth_sessions": len(facts["synth"]["files"]),
        # the golden solver is deterministic: copies of a session from other seeds are exact duplicates the build drops
        "dataset": {k: facts["build"]["counts"].get(k) for k in ("read", "kept", "duplicate_exact", "duplicate_near",
                                                                  "kept_by_source")},
        "training": {"status": train["status"], "global_step": train["global_step"],
                     "initial_val_loss": train.get("initial_val_loss"), "final_val_loss": train.get("final_val_loss"),
                     **(train.get("data") or {})},
        "base": summarize(out / "eval" / "base" / "results.json"),
        "tuned": summarize(out / "eval" / "tuned" / "results.json"),
        **({"heldout_families": heldout} if heldout else {}),
        "seconds": facts["seconds"],
        "wall_s": wall_s,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="keep the run here (default: a temporary folder)")
    ap.add_argument("--model", default="smollm2-135m", help="base model spec (a local folder, an HF id in the cache, "
                    "or an embedded name; default: the embedded SmolLM2-135M); the recipe's own model is replaced")
    ap.add_argument("--seeds", type=int, default=1, help="eval runs per default-suite task, per model (one: greedy; "
                    "several: sampled at 0.7, `eval agent`'s rule; `bench/sampled_seeds.py` re-runs a finished run so)")
    ap.add_argument("--synth-seeds", type=int, default=1, help="golden-solver recordings per training task")
    ap.add_argument("--per-kind", type=int, default=36, help="generated training tasks per kind (edit, recover, "
                    "create), spread evenly over the kind's families")
    ap.add_argument("--heldout-instances", type=int, default=3, help="generated instances per held-out family")
    ap.add_argument("--family-seed", type=int, default=0, help="seed of the generated tasks")
    ap.add_argument("--max-tokens", type=int, default=160, help="output cap per model turn (an edit call needs ~100)")
    ap.add_argument("--traces", type=Path, default=None, help="real traces to add to the synthesised sessions")
    ap.add_argument("--recipe", type=Path, default=None, help="training recipe (default: the demo's)")
    ap.add_argument("--epochs", type=float, default=None, help="passes over the training chains (default: the "
                    "recipe's num_train_epochs)")
    ap.add_argument("--no-contrast", dest="contrast", action="store_false",
                    help="leave out the contrast sessions (a refused double-encoded first call, then the recovery)")
    ap.add_argument("--retry", action="store_true",
                    help="add the retry sessions (a failed first edit kept as context only, a re-read of the file, "
                         "then the exact edit)")
    ap.add_argument("--second-try", action="store_true",
                    help="add the second-try sessions (a wrong first change kept as context only, the failing "
                         "check, a re-read of the file, then the repair of the wrong lines)")
    ap.add_argument("--direct", action="store_true",
                    help="then answer the run's suites directly, without the harness (`bench/direct_ceiling.py`), "
                         "base and tuned: can the model write the change at all? (adds about 15 minutes)")
    ap.add_argument("--from-run", type=Path, default=None,
                    help="run nothing: print the JSON of a finished run (e.g. `harnessfit demo --out DIR`)")
    a = ap.parse_args()

    if a.from_run is not None:
        if not (a.from_run / "facts.json").is_file():
            sys.exit(f"{a.from_run}: no facts.json (not a finished demo run)")
        print(json.dumps(run_summary(a.from_run, {"from_run": str(a.from_run)}), indent=1))
        return

    from rich.console import Console

    from harnessfit.demo.pipeline import DemoPlan, run_demo
    from harnessfit.errors import UserError
    from harnessfit.models import resolve_model

    try:
        resolve_model(a.model)  # a model that cannot be loaded fails now, not after minutes of synthesis
    except UserError as exc:
        sys.exit(f"error: {exc}")

    tmp = None
    if a.out is None:
        tmp = tempfile.TemporaryDirectory(prefix="bench_training_effect_")
        out = Path(tmp.name)
    else:
        out = a.out
    t0 = time.perf_counter()
    # each task's own turn and time limits (the demo shortens them), no raw suites or probes
    plan = DemoPlan(out=out, model=a.model, traces=a.traces, seeds=a.seeds, synth_seeds=a.synth_seeds, recipe=a.recipe,
                    epochs=a.epochs, family_per_kind=a.per_kind, heldout_instances=a.heldout_instances,
                    family_seed=a.family_seed, eval_max_turns=None, eval_max_seconds=None,
                    serve_max_tokens=a.max_tokens, static=False, eval_workers=2, contrast=a.contrast, retry=a.retry,
                    second_try=a.second_try)
    # the trainer prints its log lines (PrinterCallback) to stdout: keep stdout for the one JSON object
    with contextlib.redirect_stdout(sys.stderr):
        run_demo(plan, console=Console(stderr=True))
    result = run_summary(out, {"model": a.model, "seeds": a.seeds, "synth_seeds": a.synth_seeds, "per_kind": a.per_kind,
                               "heldout_instances": a.heldout_instances, "family_seed": a.family_seed,
                               "max_tokens": a.max_tokens, "traces": str(a.traces) if a.traces else None,
                               "contrast": a.contrast, "retry": a.retry, "second_try": a.second_try,
                               "epochs": a.epochs},
                         wall_s=round(time.perf_counter() - t0, 1))
    if a.direct:
        from direct_ceiling import measure  # bench/ is the script's folder, so it is on sys.path

        t1 = time.perf_counter()
        result["direct"] = measure(out)
        result["wall_s_with_direct"] = round(result["wall_s"] + time.perf_counter() - t1, 1)
    print(json.dumps(result, indent=1))
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    sys.exit(main())
