"""Does RL in the real harness move the held-out suite? ``harnessfit train rl`` from an SFT adapter for a time budget.

From the demo's SFT adapter (``harnessfit demo --out DIR`` writes it to ``DIR/train/adapter``), ``--per-kind``
training tasks of each kind (edit, recover, create) are generated from the *training* task families; ``train rl``
runs on them for as many steps as start within ``--minutes`` (``max_seconds``; a started step runs to its end), and
evaluates the policy on the held-out *default* suite (``examples/tasks/default``, ``--eval-seeds`` episodes per
task, never trained on) before the first step and after the last. Prints one JSON object and writes it to
``bench/results/rl_effect-<date>.json``: per step the mean episode reward and the complete-loop rate with its 95%
Wilson interval on the training tasks; the held-out before/after rates with intervals (named as in the eval
results: ``complete_loop``, ``checker_passed`` …, plus ``valid_tool_calls``); wall seconds; the settings.
Budget: ``--minutes`` (the first step always runs to its end) plus the two evals (27 episodes each with the
defaults), on 2 quiet cores.

    .venv/bin/python bench/rl_effect.py --sft-adapter out/demo/train/adapter --out /tmp/rl-effect
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import sys
import time
from pathlib import Path

from training_effect import summarize  # the same rate names and intervals as the SFT bench (bench/ is on sys.path)

from harnessfit.eval.stats import rate

RESULTS = Path(__file__).resolve().parent / "results"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def per_step(run: Path) -> list[dict]:
    """Reward and complete-loop rate per step on the training tasks (``metrics.jsonl`` and ``episodes.jsonl``)."""
    episodes = _rows(run / "episodes.jsonl")
    out = []
    for s in _rows(run / "metrics.jsonl"):
        scored = [e for e in episodes if e["step"] == s["step"] and e.get("reward") is not None]
        loops = sum(1 for e in scored if e.get("complete_loop"))
        out.append({"step": s["step"], "reward_mean": s.get("reward_mean"),
                    "complete_loop": rate(loops, len(scored)).as_dict(), "episodes": s.get("episodes"),
                    "scored": s.get("scored"), "zero_variance_groups": s.get("zero_variance_groups"),
                    "groups": s.get("groups"), "loss": s.get("loss"), "sampled_tokens": s.get("sampled_tokens"),
                    "seconds": s.get("seconds"), "tasks": s.get("tasks")})
    return out


def run_summary(run: Path, settings: dict, wall_s: float | None = None) -> dict:
    """The bench's JSON from a finished ``train rl`` folder."""
    facts = json.loads((run / "run.json").read_text())
    held = {phase: summarize(run / f"eval_{phase}" / "results.json") for phase in ("before", "after")
            if (run / f"eval_{phase}" / "results.json").is_file()}
    resolved = json.loads((run / "recipe.json").read_text()).get("resolved", {})
    keys = ("model", "sft_adapter", "suite", "max_seconds", "max_steps", "tasks_per_step", "num_generations",
            "workers", "episode_max_turns", "episode_max_seconds", "max_completion_length", "temperature",
            "learning_rate", "loss_type", "beta", "rewards", "eval_suite", "eval_seeds", "seed")
    return {"bench": "rl_effect", "settings": {**settings, "recipe": {k: resolved.get(k) for k in keys}},
            "status": facts["status"], "ended": facts["ended"], "steps": facts["steps"],
            "per_step": per_step(run), "heldout": held, "missing_evals": facts.get("missing_evals") or None,
            "seconds": facts["seconds"], "wall_s": wall_s, "run": str(run)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sft-adapter", type=Path, required=True, help="the SFT adapter to start from (the demo's: "
                    "OUT/train/adapter of `harnessfit demo --out OUT`)")
    ap.add_argument("--minutes", type=float, default=30.0, help="time budget of the RL steps (no step starts after)")
    ap.add_argument("--per-kind", type=int, default=4, help="generated training tasks per kind (edit, recover, "
                    "create), spread over the kind's training families")
    ap.add_argument("--seed", type=int, default=1, help="seed of the generated tasks and of the run")
    ap.add_argument("--eval-suite", default="default", help="held-out suite (default: examples/tasks/default)")
    ap.add_argument("--eval-seeds", type=int, default=3, help="episodes per held-out task, before and after")
    ap.add_argument("--recipe", type=Path, default=None, help="a train rl recipe for the other fields (suite, "
                    "sft_adapter, max_seconds, max_steps, the eval fields and seed are the bench's)")
    ap.add_argument("--out", type=Path, required=True, help="run folder (tasks/, rl/)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="where rl_effect-<date>.json is written")
    a = ap.parse_args()
    if not (a.sft_adapter / "adapter_config.json").is_file():
        sys.exit(f"--sft-adapter {a.sft_adapter}: not an adapter folder (no adapter_config.json)")

    from harnessfit.tasks import families_in
    from harnessfit.tasks.generate import generate_tasks, per_kind_counts
    from harnessfit.train.config import load_config
    from harnessfit.train.rl.config import HarnessfitRLConfig
    from harnessfit.train.rl.loop import train_rl

    t0 = time.perf_counter()
    fams = families_in("train")
    suite = a.out / "tasks"
    generated = generate_tasks(fams, suite, n=per_kind_counts(fams, a.per_kind), seed=a.seed, force=True)
    t_tasks = round(time.perf_counter() - t0, 1)
    run = a.out / "rl"
    cfg = load_config(HarnessfitRLConfig, a.recipe, [], output_dir=str(run / "checkpoints"), suite=str(suite),
                      sft_adapter=str(a.sft_adapter), max_seconds=a.minutes * 60, max_steps=10_000,
                      eval_suite=a.eval_suite, eval_seeds=a.eval_seeds, seed=a.seed)
    with contextlib.redirect_stdout(sys.stderr):  # stdout is for the one JSON object
        train_rl(cfg, run)
    settings = {"sft_adapter": str(a.sft_adapter), "minutes": a.minutes, "per_kind": a.per_kind, "seed": a.seed,
                "eval_suite": a.eval_suite, "eval_seeds": a.eval_seeds, "training_tasks": len(generated["tasks"])}
    result = run_summary(run, settings, wall_s=round(time.perf_counter() - t0, 1))
    result["seconds"]["generate_tasks"] = t_tasks
    text = json.dumps(result, indent=1)
    print(text)
    a.results.mkdir(parents=True, exist_ok=True)
    (a.results / f"rl_effect-{datetime.date.today():%Y-%m-%d}.json").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
