"""The ``train rl`` report section: reward and complete-loop rate per step, each linked to the episodes behind it.

Read from the run folder only (``metrics.jsonl``, ``episodes.jsonl``); written as ``OUT/rl_report.md``. Task ids
and errors come from files the run wrote from suites and episodes, so they are escaped for Markdown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessfit.core.jsonio import read_jsonl

__all__ = ["rl_section", "write_rl_report"]


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
    lines = ["## RL in the harness (train rl)", "",
             "Per step: the mean episode reward and the complete-loop rate over the scored episodes (an unscored "
             "episode — sandbox failure, checker never ran — is left out, never counted as 0), and the episodes "
             "behind each point.", "",
             "| step | reward | complete loops | scored / episodes | zero-variance groups | loss | episodes |",
             "|---:|---:|---:|---:|---:|---:|---|"]
    for s in steps:
        behind = [e for e in episodes if e.get("step") == s["step"]]
        lines.append(f"| {s['step']} | {_f(s.get('reward_mean'))} | {_f(s.get('complete_loop_rate'))} | "
                     f"{s.get('scored')} / {s.get('episodes')} | {s.get('zero_variance_groups')} / {s.get('groups')} "
                     f"| {_f(s.get('loss'))} | {_episode_links(behind)} |")
    if not steps:
        lines.append("| – | – | – | – | – | – | no step finished |")
    unscored = [e for e in episodes if e.get("reward") is None]
    if unscored:
        lines += ["", "Unscored episodes:", ""]
        lines += [f"- step {e['step']} {_md(e['task_id'])} g{e['group_index']}: {_md(e.get('unscored') or '')[:200]}"
                  for e in unscored]
    return lines


def write_rl_report(out_dir: Path, *, status: str = "completed", stop_reason: str | None = None) -> Path:
    """``OUT/rl_report.md``: the status line and ``rl_section``."""
    head = [f"# train rl: {status}" + (f" ({_md(stop_reason)})" if stop_reason else ""), ""]
    path = Path(out_dir) / "rl_report.md"
    path.write_text("\n".join(head + rl_section(out_dir)) + "\n", encoding="utf-8")
    return path
