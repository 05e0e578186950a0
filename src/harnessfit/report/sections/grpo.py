"""The GRPO section: the training section's curves, result and resource envelope for ``RUN_DIR/grpo`` (the
``GRPO_CURVES``), plus the run's published-style analysis and its held-out numbers, read from the files
``harnessfit train grpo`` writes (``harnessfit.train.grpo``): ``grpo_stats.json`` (first vs last 10 percent of
steps, Welch's t and p, the slope, best-of-G vs mean-of-G, ...), ``heldout_before.json`` / ``heldout_after.json``
(validation decision points, greedy and best-of-G, the training rewards) and ``eval/before_after.md`` (the suite
through the real Pi with the starting policy and the GRPO adapter), all linked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from markupsafe import Markup

from harnessfit.report.sections._files import copy_in
from harnessfit.report.sections.training import GRPO_CURVES, training_section
from harnessfit.report.site import Section, fmt_num, markdown_html, render

__all__ = ["section", "FOLDER", "STAT_ROWS", "HELDOUT_ROWS"]

FOLDER = "grpo"

# label, key in a window of grpo_stats.json, kind ("rate" shows a percentage)
STAT_ROWS: tuple[tuple[str, str, str], ...] = (
    ("mean reward", "mean_reward", "num"),
    ("median reward", "median_reward", "num"),
    ("best-of-G (mean over groups)", "best_of_g", "num"),
    ("mean-of-G", "mean_of_g", "num"),
    ("share < 0.25", "share_below_025", "rate"),
    ("share > 0.70", "share_above_070", "rate"),
    ("over-long share", "overlong_share", "rate"),
    ("mean completion length (tokens)", "mean_length", "num"),
    ("valid-call share", "valid_call_share", "rate"),
    ("within-group sd", "within_group_sd", "num"),
    ("zero-variance groups", "zero_variance_groups", "rate"),
    ("unscorable share", "unscorable_share", "rate"),
    ("policy KL", "kl", "num"),
    ("token entropy", "entropy", "num"),
    ("completions", "completions", "num"),
)

HELDOUT_ROWS: tuple[tuple[str, str, str], ...] = (
    ("greedy reward", "greedy_reward", "num"),
    ("mean-of-G reward", "mean_of_g_reward", "num"),
    ("best-of-G reward", "best_of_g_reward", "num"),
    ("valid-call rate, greedy", "greedy_valid_call_rate", "rate"),
    ("valid-call rate, one sample", "sampled_valid_call_rate", "rate"),
    ("valid-call rate, best of G (any valid)", "best_of_g_valid_call_rate", "rate"),
    ("over-long share, greedy", "greedy_overlong_share", "rate"),
    ("unscorable completions", "unscorable", "num"),
)

_training = training_section(FOLDER, "GRPO training", curves=GRPO_CURVES, report_names=("grpo_report.md",))


def _cell(value: Any, kind: str) -> str:
    if kind == "rate" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{100 * value:.1f}%"
    return fmt_num(value)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def section(run_dir: Path) -> Section | None:
    """GRPO training: curves, result and envelope (as for SFT), the reward analysis and the held-out table."""
    base = _training(run_dir)
    if base is None:
        return None
    d = run_dir / FOLDER
    stats = _read(d / "grpo_stats.json") or {}
    windows = [(name, stats.get(name)) for name in ("first", "last", "all") if isinstance(stats.get(name), dict)]
    stat_rows = [(label, [_cell(w.get(key), kind) for _, w in windows]) for label, key, kind in STAT_ROWS]
    heldout = {k: h for k in ("before", "after") if (h := _read(d / f"heldout_{k}.json"))}
    held_rows = [(label, [_cell(h.get(key), kind) for h in heldout.values()]) for label, key, kind in HELDOUT_ROWS]
    names = sorted({n for h in heldout.values() for n in (h.get("greedy_components") or {})})
    held_rows += [
        (f"greedy {n}", [fmt_num((h.get("greedy_components") or {}).get(n)) for h in heldout.values()]) for n in names
    ]
    files = dict(base.files)
    links = {
        name: copy_in(files, run_dir, d / name)
        for name in ("grpo_stats.json", "completions.jsonl", "heldout_before.json", "heldout_after.json")
    }
    table = d / "eval" / "before_after.md"
    in_harness: Markup | None = None
    if table.is_file():
        links["eval/before_after.md"] = copy_in(files, run_dir, table)
        in_harness = markdown_html(table.read_text(encoding="utf-8", errors="replace"))
    first, last = stats.get("first_steps"), stats.get("last_steps")
    extra = render(
        "sections/grpo.html.jinja",
        windows=[n for n, _ in windows],
        stat_rows=stat_rows,
        first=first,
        last=last,
        stats=stats,
        heldout=list(heldout),
        held_rows=held_rows,
        points=next((h.get("points") for h in heldout.values()), None),
        generations=next((h.get("generations") for h in heldout.values()), None),
        in_harness=in_harness,
        links=links,
        folder=FOLDER,
    )
    summary = base.summary
    f, la = (stats.get("first") or {}).get("mean_reward"), (stats.get("last") or {}).get("mean_reward")
    if f is not None and la is not None:
        summary += f"; reward {fmt_num(f)} → {fmt_num(la)} (Welch p {fmt_num(stats.get('welch_p'))})"
    if "before" in heldout and "after" in heldout:
        summary += (
            f"; held-out valid calls {_cell(heldout['before'].get('greedy_valid_call_rate'), 'rate')} → "
            f"{_cell(heldout['after'].get('greedy_valid_call_rate'), 'rate')}"
        )
    return Section(base.key, base.title, Markup(base.body + extra), summary=summary, files=files, pages=base.pages)
