"""``grpo_report.md`` + PNGs: the published run's analysis, reproduced from the run folder's files only
(``completions.jsonl`` — one row per completion with every reward component —, ``metrics.jsonl``, the held-out
summaries, the in-harness table), so a report can be rebuilt for any run without the trainer.

Statistics: mean reward of the first vs the last 10 percent of steps with Welch's t and its two-sided p; the
least-squares slope of reward on step over all completions (per completion, with its p); best-of-G vs mean-of-G
(per group, then averaged); median; share below 0.25 and above 0.70; over-long share; mean completion length;
policy KL and token entropy (TRL's logged ``kl``, ``entropy``); within-group standard deviation and the share of
zero-variance groups (no learning signal); unscorable share; each component's mean per step.
"""

from __future__ import annotations

import html
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

from harnessfit.core.jsonio import read_jsonl
from harnessfit.train.heldout import HELDOUT_FILES
from harnessfit.train.report import plot_series

__all__ = ["read_completions", "grpo_stats", "write_grpo_report", "first_last_steps"]


def read_completions(out_dir: Path) -> list[dict[str, Any]]:
    """Every completion row of the run (all processes' files)."""
    rows: list[dict[str, Any]] = []
    for path in sorted(out_dir.glob("completions*.jsonl")):
        rows.extend(read_jsonl(path))
    return rows


def first_last_steps(steps: list[int], share: float = 0.1) -> tuple[list[int], list[int]]:
    """The first and the last ``share`` of the steps (at least one step each)."""
    steps = sorted(set(steps))
    k = max(1, math.ceil(share * len(steps)))
    return steps[:k], steps[-k:]


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def _welch(a: list[float], b: list[float]) -> tuple[float | None, float | None]:
    """Welch's t of b vs a and its two-sided p (None when either side has < 2 values or no variance)."""
    if len(a) < 2 or len(b) < 2:
        return None, None
    if statistics.variance(a) == 0 and statistics.variance(b) == 0:
        return None, None
    from scipy import stats

    res = stats.ttest_ind(b, a, equal_var=False)
    return float(res.statistic), float(res.pvalue)


def _slope(xs: list[float], ys: list[float]) -> tuple[float | None, float | None]:
    if len(set(xs)) < 2:
        return None, None
    from scipy import stats

    res = stats.linregress(xs, ys)
    return float(res.slope), float(res.pvalue)


def _groups(rows: list[dict[str, Any]]) -> dict[tuple[int, int], list[float]]:
    out: dict[tuple[int, int], list[float]] = defaultdict(list)
    for r in rows:
        if r.get("reward") is not None:
            out[(r["step"], r["group"])].append(r["reward"])
    return out


def _window(rows: list[dict[str, Any]], metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """The statistics of one window of completions (and the TRL metrics logged at those steps)."""
    scored = [r["reward"] for r in rows if r.get("reward") is not None]
    groups = [g for g in _groups(rows).values() if g]
    sds = [statistics.stdev(g) for g in groups if len(g) >= 2]
    steps = {r["step"] for r in rows}
    logged = [m for m in metrics if m.get("step") in steps]
    return {
        "completions": len(rows),
        "groups": len(groups),
        "mean_reward": _mean(scored),
        "median_reward": statistics.median(scored) if scored else None,
        "best_of_g": _mean([max(g) for g in groups]),
        "mean_of_g": _mean([statistics.fmean(g) for g in groups]),
        "share_below_025": _mean([float(x < 0.25) for x in scored]),
        "share_above_070": _mean([float(x > 0.70) for x in scored]),
        "overlong_share": _mean([float(bool(r.get("truncated"))) for r in rows]),
        "mean_length": _mean([float(r.get("length", 0)) for r in rows]),
        "valid_call_share": _mean([float(bool(r.get("valid_call"))) for r in rows]),
        "within_group_sd": _mean(sds),
        "zero_variance_groups": _mean([float(sd == 0) for sd in sds]),
        "unscorable_share": _mean([float(r.get("reward") is None) for r in rows]),
        "unscorable": sum(r.get("reward") is None for r in rows),
        "kl": _mean([m["kl"] for m in logged if isinstance(m.get("kl"), (int, float))]),
        "entropy": _mean([m["entropy"] for m in logged if isinstance(m.get("entropy"), (int, float))]),
    }


def grpo_stats(rows: list[dict[str, Any]], metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """Every statistic of the report (see the module docstring)."""
    if not rows:
        return {"steps": 0}
    first, last = first_last_steps([r["step"] for r in rows])
    f_rows = [r for r in rows if r["step"] in set(first)]
    l_rows = [r for r in rows if r["step"] in set(last)]
    f_scored = [r["reward"] for r in f_rows if r.get("reward") is not None]
    l_scored = [r["reward"] for r in l_rows if r.get("reward") is not None]
    t, p = _welch(f_scored, l_scored)
    pts = [(float(r["step"]), float(r["reward"])) for r in rows if r.get("reward") is not None]
    slope, slope_p = _slope([x for x, _ in pts], [y for _, y in pts])
    per_step: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        bucket = per_step[r["step"]]
        if r.get("reward") is not None:
            bucket["reward"].append(r["reward"])
        bucket["length"].append(float(r.get("length", 0)))
        bucket["overlong"].append(float(bool(r.get("truncated"))))
        for name, value in (r.get("components") or {}).items():
            if value is not None:
                bucket[f"c:{name}"].append(value)
    curves = {step: {k: statistics.fmean(v) for k, v in b.items() if v} for step, b in sorted(per_step.items())}
    for (step, _g), g in _groups(rows).items():
        curves[step].setdefault("best_of_g_values", []).append(max(g))
    for c in curves.values():
        vals = c.pop("best_of_g_values", [])
        if vals:
            c["best_of_g"] = statistics.fmean(vals)
    return {
        "steps": len({r["step"] for r in rows}),
        "first_steps": [first[0], first[-1]],
        "last_steps": [last[0], last[-1]],
        "first": _window(f_rows, metrics),
        "last": _window(l_rows, metrics),
        "all": _window(rows, metrics),
        "welch_t": t,
        "welch_p": p,
        "slope_per_step": slope,
        "slope_p": slope_p,
        "components": sorted({k for r in rows for k in (r.get("components") or {})}),
        "curves": {str(k): v for k, v in curves.items()},
        "unscorable_reasons": _reasons(rows),
    }


def _reasons(rows: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for r in rows:
        if r.get("reward") is None:
            out[str(r.get("judge_reason") or "unscorable")] += 1
    return dict(sorted(out.items()))


def _plot(stats: dict[str, Any], metrics: list[dict[str, Any]], plots: Path) -> list[Path]:
    plots.mkdir(parents=True, exist_ok=True)
    curves = {int(k): v for k, v in stats.get("curves", {}).items()}
    steps = sorted(curves)
    out = []

    def figure(name: str, ylabel: str, series: list[tuple[str, list[int], list[float]]]) -> None:
        out.append(plot_series(plots / name, ylabel, series, legend_size=7))

    def curve(key: str) -> tuple[list[int], list[float]]:
        xs = [s for s in steps if key in curves[s]]
        return xs, [curves[s][key] for s in xs]

    figure("reward.png", "reward", [("mean of G", *curve("reward")), ("best of G", *curve("best_of_g"))])
    figure("components.png", "component mean", [(name, *curve(f"c:{name}")) for name in stats.get("components", [])])
    figure(
        "length.png",
        "tokens / share",
        [("mean completion length / max", *_scaled(curve("length"))), ("over-long share", *curve("overlong"))],
    )

    def metric(key: str) -> tuple[list[int], list[float]]:
        pts = [(m["step"], m[key]) for m in metrics if isinstance(m.get(key), (int, float))]
        return [p[0] for p in pts], [p[1] for p in pts]

    figure(
        "kl_entropy.png",
        "value",
        [
            ("policy KL", *metric("kl")),
            ("token entropy", *metric("entropy")),
            ("frac groups zero std", *metric("frac_reward_zero_std")),
        ],
    )
    return out


def _scaled(xy: tuple[list[int], list[float]]) -> tuple[list[int], list[float]]:
    xs, ys = xy
    top = max(ys, default=0) or 1
    return xs, [y / top for y in ys]


def _f(x: Any, nd: int = 3) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{nd}f}" if abs(x) >= 1e-3 or x == 0 else f"{x:.2e}"
    return html.escape(str(x))


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


_ROWS = [  # label, key, formatter
    ("mean reward", "mean_reward", _f),
    ("median reward", "median_reward", _f),
    ("best-of-G (mean over groups)", "best_of_g", _f),
    ("mean-of-G", "mean_of_g", _f),
    ("share < 0.25", "share_below_025", _pct),
    ("share > 0.70", "share_above_070", _pct),
    ("over-long share", "overlong_share", _pct),
    ("mean completion length (tokens)", "mean_length", _f),
    ("valid-call share", "valid_call_share", _pct),
    ("within-group sd", "within_group_sd", _f),
    ("zero-variance groups", "zero_variance_groups", _pct),
    ("unscorable share", "unscorable_share", _pct),
    ("policy KL", "kl", _f),
    ("token entropy", "entropy", _f),
    ("completions", "completions", _f),
]


def _heldout_table(out_dir: Path) -> list[str]:
    found = {k: orjson.loads((out_dir / f).read_bytes()) for k, f in HELDOUT_FILES.items() if (out_dir / f).is_file()}
    if not found:
        return ["No held-out evaluation in this run (heldout: false, or the run stopped before it)."]
    any_ = next(iter(found.values()))
    lines = [
        f"{any_['points']} held-out decision points (eval_split), {any_['generations']} samples each at the "
        "training temperature; the same rewards as training.",
        "",
        "| | " + " | ".join(found) + " |",
        "|---|" + "---|" * len(found),
    ]
    for label, key, fmt in [
        ("greedy reward", "greedy_reward", _f),
        ("mean-of-G reward", "mean_of_g_reward", _f),
        ("best-of-G reward", "best_of_g_reward", _f),
        ("valid-call rate, greedy", "greedy_valid_call_rate", _pct),
        ("valid-call rate, one sample", "sampled_valid_call_rate", _pct),
        ("valid-call rate, best of G (any valid)", "best_of_g_valid_call_rate", _pct),
        ("over-long share, greedy", "greedy_overlong_share", _pct),
        ("unscorable completions", "unscorable", _f),
    ]:
        lines.append(f"| {label} | " + " | ".join(fmt(v.get(key)) for v in found.values()) + " |")
    names = sorted({n for v in found.values() for n in v.get("greedy_components", {})})
    for n in names:
        lines.append(
            f"| greedy `{n}` | " + " | ".join(_f(v["greedy_components"].get(n)) for v in found.values()) + " |"
        )
    return lines


def write_grpo_report(
    out_dir: Path, *, status: str = "completed", stop_reason: str | None = None, notes: list[str] | None = None
) -> tuple[Path, dict[str, Any]]:
    """Write ``grpo_report.md`` and ``plots/*.png``; returns the path and the statistics."""
    out_dir = Path(out_dir)
    rows = read_completions(out_dir)
    metrics = list(read_jsonl(out_dir / "metrics.jsonl")) if (out_dir / "metrics.jsonl").is_file() else []
    stats = grpo_stats(rows, metrics)
    plots = _plot(stats, metrics, out_dir / "plots") if rows else []
    lines = [f"# GRPO report — {status}", ""]
    if stop_reason:
        lines += [
            f"**Stopped by the health guard:** {html.escape(stop_reason)}. A checkpoint was saved; "
            "`harnessfit train grpo RECIPE --resume` continues from it.",
            "",
        ]
    if not rows:
        lines += ["No completions were logged."]
    else:
        f, la = stats["first_steps"], stats["last_steps"]
        lines += [
            f"{stats['steps']} steps, {stats['all']['completions']} completions in {stats['all']['groups']} "
            f"groups. Rewards are the recipe's weighted components (`completions.jsonl` keeps every component "
            "per completion).",
            "",
            "## Training reward: first vs last 10 percent of steps",
            "",
            f"| statistic | first (steps {f[0]}–{f[1]}) | last (steps {la[0]}–{la[1]}) | all |",
            "|---|---|---|---|",
        ]
        for label, key, fmt in _ROWS:
            lines.append(
                f"| {label} | {fmt(stats['first'][key])} | {fmt(stats['last'][key])} | {fmt(stats['all'][key])} |"
            )
        lines += [
            "",
            f"- Welch's t (last vs first): t = {_f(stats['welch_t'])}, two-sided p = {_f(stats['welch_p'])}",
            f"- least-squares slope of reward on step (per completion): {_f(stats['slope_per_step'], 5)} per "
            f"step, p = {_f(stats['slope_p'])}",
        ]
        if stats["unscorable_reasons"]:
            lines.append(
                "- unscorable completions by reason: "
                + ", ".join(f"{html.escape(k)} {v}" for k, v in stats["unscorable_reasons"].items())
            )
        lines += [
            "",
            "## Reward components (mean over scored completions)",
            "",
            "| component | first | last |",
            "|---|---|---|",
        ]
        first_steps, last_steps = set(range(f[0], f[1] + 1)), set(range(la[0], la[1] + 1))
        for name in stats["components"]:

            def comp_mean(steps: set[int], name: str = name) -> float | None:
                vals = [
                    r["components"][name]
                    for r in rows
                    if r["step"] in steps and r.get("components", {}).get(name) is not None
                ]
                return _mean(vals)

            lines.append(f"| `{name}` | {_f(comp_mean(first_steps))} | {_f(comp_mean(last_steps))} |")
        lines += ["", "## Curves", ""] + [f"![{p.stem}](plots/{p.name})" for p in plots]
    lines += ["", "## Held-out decision points: before / after", ""] + _heldout_table(out_dir)
    table = out_dir / "eval" / "before_after.md"
    if table.is_file():
        lines += [
            "",
            "## In the real harness: before / after",
            "",
            table.read_text(encoding="utf-8").replace("# Before / after", "### Before / after", 1),
        ]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {html.escape(n)}" for n in notes]
    path = out_dir / "grpo_report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out_dir / "grpo_stats.json").write_bytes(
        orjson.dumps({k: v for k, v in stats.items() if k != "curves"}, option=orjson.OPT_INDENT_2)
    )
    return path, stats
