"""The ``train rl`` report section: reward and complete-loop rate per step, each linked to the episodes behind it.

Read from the run folder only (``metrics.jsonl``, ``episodes.jsonl``, ``eval_before/`` and ``eval_after/``); written as
``OUT/rl_report.md``: how the run ended, the steps, and the held-out suite before/after (``train.rl.heldout``) with
95% Wilson intervals (``eval.compare``'s rows). Task ids and errors come from files the run wrote from suites and
episodes, so they are escaped for Markdown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessfit.core.jsonio import read_jsonl
from harnessfit.train.rl.heldout import HELDOUT_ROWS, PHASES, finished_eval

__all__ = ["rl_section", "heldout_section", "write_rl_report"]


def _md(text: Any) -> str:
    """Text safe in a Markdown table cell (no HTML, no cell breaks, no link syntax)."""
    out = str(text).replace("\\", "\\\\")
    for ch in "|<>[]()`*_":
        out = out.replace(ch, "\\" + ch)
    return " ".join(out.split())


def _f(x: Any) -> str:
    return "–" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def _episode_links(rows: list[dict[str, Any]]) -> str:
    links = []
    for r in rows:
        label = f"{r['task_id']} g{r['group_index']}"
        mark = "" if r.get("reward") is not None else " (unscored)"
        links.append(f"[{_md(label)}{mark}](<{r['episode_dir']}>)")
    return ", ".join(links)


def rl_section(out_dir: Path) -> list[str]:
    """The section's Markdown lines."""
    out_dir = Path(out_dir)
    steps = list(read_jsonl(out_dir / "metrics.jsonl", bad_lines="skip", objects_only=True, missing_ok=True))
    episodes = list(read_jsonl(out_dir / "episodes.jsonl", bad_lines="skip", objects_only=True, missing_ok=True))
    lines = [
        "## RL in the harness (train rl)",
        "",
        "Per step: the mean episode reward and the complete-loop rate over the scored episodes (an unscored "
        "episode — sandbox failure, checker never ran — is left out, never counted as 0), and the episodes "
        "behind each point.",
        "",
        "| step | reward | complete loops | scored / episodes | zero-variance groups | loss | episodes |",
        "|---:|---:|---:|---:|---:|---:|---|",
    ]
    for s in steps:
        behind = [e for e in episodes if e.get("step") == s["step"]]
        lines.append(
            f"| {s['step']} | {_f(s.get('reward_mean'))} | {_f(s.get('complete_loop_rate'))} | "
            f"{s.get('scored')} / {s.get('episodes')} | {s.get('zero_variance_groups')} / {s.get('groups')} "
            f"| {_f(s.get('loss'))} | {_episode_links(behind)} |"
        )
    if not steps:
        lines.append("| – | – | – | – | – | – | no step finished |")
    unscored = [e for e in episodes if e.get("reward") is None]
    if unscored:
        lines += ["", "Unscored episodes:", ""]
        lines += [
            f"- step {e['step']} {_md(e['task_id'])} g{e['group_index']}: {_md(e.get('unscored') or '')[:200]}"
            for e in unscored
        ]
    return lines


def heldout_section(out_dir: Path, *, missing: dict[str, str] | None = None) -> list[str]:
    """The held-out before/after table of the finished evals, and why one is missing (``missing``: phase → reason);
    no lines when neither eval was asked for."""
    # heavy: eval pulls fastapi/uvicorn (its endpoint); loaded when the held-out table is written
    from harnessfit.eval.compare import compare_rows
    from harnessfit.eval.results import load_results

    found = {p: finished_eval(out_dir, p) for p in PHASES}
    missing = {p: why for p, why in (missing or {}).items() if found.get(p) is None}
    if not any(found.values()) and not missing:
        return []
    lines = ["## Held-out suite before / after (train rl)", ""]
    done = [(p, path) for p, path in found.items() if path is not None]
    if done:
        results = [load_results(path) for _, path in done]
        suite = results[0].suite
        lines += [
            f"Suite `{_md(suite.get('name'))}` ({len(suite.get('tasks', []))} tasks), "
            f"{results[0].config.get('seeds')} episode(s) per task: the policy served by the training process "
            "at its sampling temperature, under the training episodes' caps. Cells: rate [95% Wilson CI] "
            "(successes/n); the episodes are in " + ", ".join(f"`eval_{p}/`" for p, _ in done) + ".",
            "",
        ]
        if len({r.suite.get("sha256") for r in results}) > 1:
            lines += ["> Warning: the two evals ran different task suites; the rates are not comparable.", ""]
        rows = [r for r in compare_rows(results) if r.key in HELDOUT_ROWS]
        lines += ["| metric | " + " | ".join(p for p, _ in done) + " |", "|---|" + "---:|" * len(done)]
        lines += [f"| {r.label} | " + " | ".join(r.cells) + " |" for r in rows]  # our labels, numbers
    for phase in PHASES:
        if found[phase] is None:
            missing.setdefault(phase, "not finished")
    return lines + ["", *[f"- no {p} eval: {_md(why)}" for p, why in missing.items()]]


def write_rl_report(
    out_dir: Path,
    *,
    status: str = "completed",
    stop_reason: str | None = None,
    ended: str | None = None,
    missing_evals: dict[str, str] | None = None,
) -> Path:
    """``OUT/rl_report.md``: the status line, why the run ended, ``rl_section`` and ``heldout_section``."""
    head = [f"# train rl: {status}" + (f" ({_md(stop_reason)})" if stop_reason else ""), ""]
    if ended:
        head += [f"Ended: {_md(ended)}.", ""]
    held = heldout_section(out_dir, missing=missing_evals)
    path = Path(out_dir) / "rl_report.md"
    path.write_text("\n".join(head + rl_section(out_dir) + ([""] + held if held else [])) + "\n", encoding="utf-8")
    return path
