"""Training sections: curves from a run's metrics JSONL, the run's result (with what training read and saw: layout,
tokens per epoch, actions seen), and the resource envelope from the health guard's samples with the stop rule that
came closest.

``training_section(folder, title, curves=…)`` makes the section function for one training folder, so SFT
(``train/``, loss on a log scale, token accuracy, learning rate) and GRPO (reward components, KL, completion
length) use the same code with different ``Curve`` lists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from harnessfit.eval.scorers import read_jsonl_tolerant
from harnessfit.report.figures import Curve, curve_svg
from harnessfit.report.sections._files import copy_in
from harnessfit.report.site import Section, render
from harnessfit.train.guard import envelope
from harnessfit.train.guard_rules import GuardRules

__all__ = ["SFT_CURVES", "GRPO_CURVES", "training_section", "read_rows", "resource_envelope"]

SFT_CURVES: tuple[Curve, ...] = (
    Curve(
        "loss",
        "Validation loss (log scale)",
        "loss",
        ("eval_loss", "loss"),
        log=True,
        labels={"eval_loss": "validation", "loss": "train"},
    ),
    Curve(
        "token_accuracy",
        "Token accuracy",
        "mean token accuracy",
        ("eval_mean_token_accuracy", "mean_token_accuracy"),
        labels={"eval_mean_token_accuracy": "validation", "mean_token_accuracy": "train"},
    ),
    Curve("learning_rate", "Learning rate", "learning rate", ("learning_rate",), labels={"learning_rate": "lr"}),
)

# TRL's GRPOTrainer logs ``reward``, ``reward_std``, ``rewards/<reward function>/mean``, ``kl``, ``entropy``,
# ``completions/mean_length`` … (GRPOTrainer._generate_and_score_completions / compute_loss in trl 1.x).
GRPO_CURVES: tuple[Curve, ...] = (
    Curve(
        "reward",
        "Reward and its components",
        "reward",
        ("reward", "rewards/*/mean", "eval_reward", "eval_rewards/*/mean"),
        labels={"reward": "total"},
    ),
    Curve("kl", "KL to the reference, entropy", "nats", ("kl", "entropy")),
    Curve(
        "completion_length",
        "Completion length",
        "tokens",
        ("completions/mean_length", "completions/max_length", "completions/clipped_ratio"),
    ),
    Curve(
        "loss",
        "Loss (log scale)",
        "loss",
        ("eval_loss", "loss"),
        log=True,
        labels={"eval_loss": "validation", "loss": "train"},
    ),
    Curve("learning_rate", "Learning rate", "learning rate", ("learning_rate",), labels={"learning_rate": "lr"}),
)

_RESULT_FIRST = (
    "status",
    "stop_reason",
    "global_step",
    "initial_val_loss",
    "final_val_loss",
    "best_val_loss",
    "best_step",
)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a broken line (a killed run) is skipped."""
    return read_jsonl_tolerant(path)


def resource_envelope(folder: Path, guard_name: str) -> tuple[list[dict[str, Any]], int, float | None]:
    """(envelope rows, samples, sampling interval) from the guard's samples and the recipe's stop rules."""
    samples = [s for s in read_rows(folder / guard_name) if "error" not in s]
    if not samples:
        return [], 0, None
    rules = GuardRules()
    recipe = folder / "recipe.json"
    if recipe.is_file():
        guard = (orjson.loads(recipe.read_bytes()) or {}).get("guard")
        if isinstance(guard, dict):
            rules = GuardRules.model_validate(guard)
    return envelope(samples, rules), len(samples), rules.interval_s


def _result_rows(result: dict[str, Any]) -> list[tuple[str, Any]]:
    first = [(k, result[k]) for k in _RESULT_FIRST if k in result]
    rest = [
        (k, v)
        for k, v in result.items()
        if k not in _RESULT_FIRST and isinstance(v, (int, float, str, bool)) and not k.endswith(("_dir", "_path"))
    ]
    return first + rest


def _recipe_rows(recipe: dict[str, Any]) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for k, v in recipe.items():
        if isinstance(v, dict):
            rows += [(f"{k}.{k2}", v2) for k2, v2 in v.items() if isinstance(v2, (int, float, str, bool)) or v2 is None]
        elif isinstance(v, (int, float, str, bool)) or v is None:
            rows.append((k, v))
    return rows


def training_section(
    folder: str,
    title: str,
    *,
    key: str | None = None,
    curves: Sequence[Curve] = SFT_CURVES,
    metrics_name: str = "metrics.jsonl",
    guard_name: str = "guard.jsonl",
    result_name: str = "result.json",
    report_names: Sequence[str] = ("train_report.md",),
) -> Callable[[Path], Section | None]:
    """The section function for the training run in ``RUN_DIR/<folder>`` (absent when it has no metrics, result or
    guard file; a run still in its first steps shows its resource envelope already)."""
    key = key or folder.replace("/", "-")

    def section(run_dir: Path) -> Section | None:
        d = run_dir / folder
        if not any((d / name).is_file() for name in (metrics_name, result_name, guard_name)):
            return None
        rows = read_rows(d / metrics_name)
        files: dict = {}
        figures = []
        for curve in curves:
            svg = curve_svg(rows, curve)
            if svg is not None:
                path = f"figures/{key}-{curve.name}.svg"
                files[path] = svg
                figures.append((path, curve.title))
        result = orjson.loads((d / result_name).read_bytes()) if (d / result_name).is_file() else {}
        recipe = orjson.loads((d / "recipe.json").read_bytes()) if (d / "recipe.json").is_file() else {}
        env, n_samples, interval = resource_envelope(d, guard_name)
        links = {
            name: copy_in(files, run_dir, d / name)
            for name in (*report_names, result_name, metrics_name, guard_name, "recipe.json")
        }
        evals = [r for r in rows if any(k.startswith("eval_") for k in r)]
        steps = max((int(r.get("step") or 0) for r in rows), default=0)
        data = result.get("data") if isinstance(result.get("data"), dict) else None
        body = render(
            "sections/training.html.jinja",
            result=_result_rows(result),
            recipe=_recipe_rows(recipe),
            data=data,
            figures=figures,
            env=env,
            n_samples=n_samples,
            interval=interval,
            links=links,
            stop_reason=result.get("stop_reason"),
            evals=evals[-12:],
            n_evals=len(evals),
            folder=folder,
        )
        status = result.get("status", "no result.json (still running, or it ended without one)")
        summary = f"{status}, {steps} optimizer steps"
        if result.get("initial_val_loss") is not None and result.get("final_val_loss") is not None:
            summary += f", validation loss {result['initial_val_loss']:.4g} → {result['final_val_loss']:.4g}"
        if data and data.get("train_actions") is not None:
            summary += (
                f"; {data.get('actions_seen')} of {data['train_actions']} training actions seen ({data.get('layout')})"
            )
        closest = next((r for r in env if r.get("closest")), None)
        if closest:
            summary += f"; closest stop rule: {closest['quantity']}"
        return Section(key, title, body, summary=summary, files=files)

    section.__doc__ = f"{title}: curves, result and resource envelope of RUN_DIR/{folder}."
    return section
