"""``train_report.md`` + PNG curves, rebuilt from the run folder's files (metrics.jsonl, guard.jsonl) only, so a
report can be regenerated for any run without the trainer."""

from __future__ import annotations

from pathlib import Path

from harnessfit.core.jsonio import read_jsonl
from harnessfit.train.config import HarnessfitSFTConfig
from harnessfit.train.fastpath import FastPath
from harnessfit.train.guard import envelope

__all__ = ["write_report", "plot_curves"]


def _rows(path: Path) -> list[dict]:
    return list(read_jsonl(path)) if path.is_file() else []


def plot_series(
    path: Path,
    ylabel: str,
    series: list[tuple[str, list[int], list[float]]],
    *,
    log: bool = False,
    legend_size: float | None = None,
) -> Path:
    """One PNG of ``(label, steps, values)`` series against the optimizer step (an empty series is left out; log
    scale only when something was drawn); the file carries no software/version metadata, so it is reproducible."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    drawn = False
    for label, xs, ys in series:
        if xs:
            ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, markersize=3, label=label)
            drawn = True
    if log and drawn:
        ax.set_yscale("log")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel(ylabel)
    if drawn:
        ax.legend(fontsize=legend_size)  # None: matplotlib's default size
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def plot_curves(metrics: list[dict], plots_dir: Path) -> list[Path]:
    """Validation loss (log scale), token accuracy and learning rate against the optimizer step."""
    plots_dir.mkdir(parents=True, exist_ok=True)
    charts = [
        ("val_loss.png", "loss (log scale)", [("eval_loss", "validation"), ("loss", "train")], True),
        (
            "token_accuracy.png",
            "mean token accuracy",
            [("eval_mean_token_accuracy", "validation"), ("mean_token_accuracy", "train")],
            False,
        ),
        ("learning_rate.png", "learning rate", [("learning_rate", "lr")], False),
    ]
    out = []
    for name, ylabel, keys, log in charts:
        series = []
        for key, label in keys:
            pts = [(r["step"], r[key]) for r in metrics if isinstance(r.get(key), (int, float))]
            series.append((label, [p[0] for p in pts], [p[1] for p in pts]))
        out.append(plot_series(plots_dir / name, ylabel, series, log=log))
    return out


def _fmt(x: float | None, digits: int = 4) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _data_lines(data: dict | None) -> list[str]:
    """The data section: layout, tokens per epoch, held-out split, and how much of the training set was seen."""
    if not data:
        return []
    seen = (
        f"{data['actions_seen']} of {data['train_actions']} training actions were in a training batch at least "
        f"once ({'every one' if data['every_action_seen'] else 'not all of them'})"
    )
    rate = data.get("supervised_tokens_per_second")
    lines = [
        "",
        "## Data",
        "",
        "| | value |",
        "|---|---|",
        f"| layout | {data['layout']} (loss weighting {data['loss_weighting']}) |",
        f"| training rows / actions | {data['train_rows']} / {data['train_actions']} |",
        f"| tokens per epoch | {data['tokens_per_epoch']:,} ({data['supervised_tokens_per_epoch']:,} supervised) |",
        f"| supervised tokens seen | {data['supervised_tokens_seen']:,} in {_fmt(data.get('train_seconds'), 1)} s "
        f"({'–' if rate is None else f'{rate:,.1f}'} per second) |",
        f"| held-out split | {data['eval_split'] or 'none'}"
        + (f" ({data['eval_actions']} actions)" if data["eval_split"] else "")
        + " |",
        "",
        f"- {seen}.",
    ]
    if data.get("eval_note"):
        lines.append(f"- {data['eval_note']}.")
    trunk = data.get("trunk_cache")
    if trunk:
        lines.append(f"- {_trunk_line(trunk)}.")
    return lines


def _trunk_line(t: dict) -> str:
    """What the trunk cache (``train.trunk``) did, in one sentence."""
    if not t.get("frozen_layers"):
        return "trunk cache: no frozen layer below the adapters, every step ran all layers"
    if t.get("verified") is False:
        return "trunk cache off: its first batch did not match the whole forward, every step ran all layers"
    return (
        f"trunk cache: the output of layers 0-{t['frozen_layers'] - 1} was computed {t['rows_computed']} times and "
        f"read from the cache {t['steps_from_cache']} times ({t['rows_cached']} rows held, {t['cached_mib']} MiB)"
    )


def write_report(
    out_dir: Path,
    *,
    recipe: HarnessfitSFTConfig,
    fast_path: FastPath,
    summary: dict,
    status: str,
    stop_reason: str | None,
    train_records: int,
    skipped: int,
    data: dict | None = None,
) -> Path:
    metrics = _rows(out_dir / "metrics.jsonl")
    samples = [s for s in _rows(out_dir / "guard.jsonl") if "error" not in s]
    plots = plot_curves(metrics, out_dir / "plots")
    evals = [r for r in metrics if "eval_loss" in r]
    lines = [f"# Training report — {status}", ""]
    if stop_reason:
        lines += [
            f"**Stopped by the health guard:** {stop_reason}. A checkpoint was saved; "
            "`harnessfit train sft RECIPE --resume` continues from it.",
            "",
        ]
    init, final, best = summary["initial_val_loss"], summary["final_val_loss"], summary["best_val_loss"]
    gap = None if final is None or best is None else final - best
    lines += [
        "| | value |",
        "|---|---|",
        f"| base model | `{recipe.model or '(from audit)'}` |",
        f"| training actions | {train_records} (skipped: {skipped}, see skipped.jsonl) |",
        f"| optimizer steps | {metrics[-1]['step'] if metrics else 0} |",
        f"| validation loss before training | {_fmt(init)} |",
        f"| final validation loss | {_fmt(final)} |",
        f"| best validation loss | {_fmt(best)} at step {summary['best_step']} |",
        f"| final − best gap | {_fmt(gap)} |",
        "",
        "## Validation",
        "",
        "| step | val loss | val token accuracy |",
        "|---|---|---|",
    ]
    lines += [f"| {r['step']} | {_fmt(r['eval_loss'])} | {_fmt(r.get('eval_mean_token_accuracy'))} |" for r in evals]
    lines += _data_lines(data)
    lines += ["", "## Curves", ""] + [f"![{p.stem}](plots/{p.name})" for p in plots]
    fpd = fast_path.model_dump()
    notes = fpd.pop("notes")
    lines += ["", "## Fast path and precision", "", "| switch | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in fpd.items()]
    lines += [""] + [f"- {n}" for n in notes]
    lines += ["", "## Resource envelope (health guard)", ""]
    env = envelope(samples, recipe.guard_rules)
    if env:
        lines += [
            f"{len(samples)} samples every {recipe.guard_rules.interval_s:g} s.",
            "",
            "| quantity | average | peak / minimum | stop rule | headroom |",
            "|---|---|---|---|---|",
        ]
        for r in env:
            rule = (
                "–" if r["limit"] is None else f"{'≥' if r['worst_kind'] == 'peak' else '<'} {r['limit']:g} {r['unit']}"
            )
            mark = " **(closest)**" if r.get("closest") else ""
            lines.append(
                f"| {r['quantity']} | {r['avg']:.2f} {r['unit']} | {r['worst_kind']} {r['worst']:.2f} "
                f"{r['unit']} | {rule} | {_fmt(r['headroom'], 2)}{mark} |"
            )
    else:
        lines.append("No guard samples (guard disabled or the run was shorter than one interval).")
    path = out_dir / "train_report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
