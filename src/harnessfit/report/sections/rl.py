"""The RL section: ``harnessfit train rl``'s reward and complete-loop rate per step, each step linked to the episodes
behind it, and the held-out suite before / after — read from the files the run writes (``harnessfit.train.rl``) in
``RUN_DIR/rl``: ``metrics.jsonl`` (one row per step), ``episodes.jsonl`` (one row per episode: its reward
components, and the eval's facts and metrics of the episode, whose files are under ``rollouts/step-NNNN/``),
``run.json`` (how the run ended), ``recipe.json`` and ``eval_before/`` / ``eval_after/`` (``eval agent`` folders).

The complete-loop rate of a step is over its scored episodes (an unscored one — sandbox failure, checker never
ran — is left out, never a 0), with its 95% Wilson interval (``eval.stats``). Every episode gets a page like an
eval episode's (``report.episodes``), read from its own files; an episode row without the eval's facts (a run
written before they were logged) links its event stream instead. Text from the run (task ids, errors, the model's
output) is escaped by the templates; the held-out table is the run's own ``rl_report.md`` table (escaped Markdown).
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harnessfit.core.jsonio import read_json_object
from harnessfit.eval.episode import Episode, EpisodeFacts, EpisodeMetrics
from harnessfit.eval.scorers import load_card_or_none
from harnessfit.eval.stats import rate
from harnessfit.report.episodes import episode_view
from harnessfit.report.figures import Curve, curve_svg
from harnessfit.report.sections._files import copy_in
from harnessfit.report.sections.training import read_rows
from harnessfit.report.site import Page, Section, fmt_num, fmt_rate, markdown_html, render
from harnessfit.train.rl.report import heldout_section

__all__ = ["section", "FOLDER", "RL_CURVE", "episode_page_path"]

FOLDER = "rl"
KEY = "rl"
RL_CURVE = Curve(
    "rl-reward",
    "Mean episode reward and complete-loop rate per step",
    "per step",
    ("reward_mean", "complete_loop_rate"),
    labels={"reward_mean": "mean reward", "complete_loop_rate": "complete-loop rate"},
)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-") or "task"


def episode_page_path(row: dict[str, Any]) -> str:
    """The report path of one RL episode's page."""
    return f"{FOLDER}/episodes/step-{int(row['step']):04d}/{_slug(row['task_id'])}/g{row['group_index']}.html"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return (read_json_object(path) or {}) if path.is_file() else {}
    except Exception:  # noqa: BLE001 - a file cut short by a kill: shown as missing
        return {}


def _step_rate(behind: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The complete-loop rate of a step's scored episodes with its Wilson interval (None: none scored)."""
    loops = [
        bool(e["complete_loop"]) for e in behind if e.get("reward") is not None and e.get("complete_loop") is not None
    ]
    return rate(sum(loops), len(loops)).as_dict() if loops else None


def _episode_page(d: Path, row: dict[str, Any], recipe: dict[str, Any], files: dict, run_dir: Path) -> Page:
    path = episode_page_path(row)
    facts = EpisodeFacts.model_validate(row["facts"])
    metrics = EpisodeMetrics.model_validate(row["metrics"]) if row.get("metrics") else None
    folder = d / "rollouts" / f"step-{int(row['step']):04d}"  # the episode's files are relative to its step's folder
    harness = recipe.get("harness")
    suite = (recipe.get("resolved") or {}).get("suite")
    view = episode_view(
        folder,
        Episode(facts=facts, metrics=metrics),
        suite_path=suite,
        card=load_card_or_none(harness=harness),
        harness=harness,
    )
    raw = {
        "session file": copy_in(files, run_dir, folder / facts.session_file) if facts.session_file else None,
        "event stream": copy_in(files, run_dir, folder / facts.events_file),
        "stderr": copy_in(files, run_dir, folder / facts.stderr_file),
    }
    label = f"train rl step {row['step']}"
    body = render(
        "episode.html.jinja",
        here=path,
        v=view,
        run=SimpleNamespace(label=label),
        export=None,
        raw=raw,
        index=f"index.html#{KEY}-step-{row['step']}",
        harness_title="Pi",
        table_anchor=KEY,
        table_name="the reward per step",
    )
    return Page(path, f"{row['task_id']} g{row['group_index']} — {label}", body)


def _episode_link(
    d: Path, row: dict[str, Any], recipe: dict[str, Any], files: dict, run_dir: Path, pages: list
) -> dict:
    """One episode as the step table shows it: its label, reward, whether it was a complete loop, and its link."""
    link = None
    if isinstance(row.get("facts"), dict):
        try:
            page = _episode_page(d, row, recipe, files, run_dir)
        except Exception:  # noqa: BLE001 - an unreadable episode is still listed, linked to its raw files
            page = None
        if page is not None:
            pages.append(page)
            link = page.path
    if link is None and row.get("episode_dir"):
        link = copy_in(files, run_dir, d / str(row["episode_dir"]) / "events.jsonl")
    return {
        "label": f"{row.get('task_id')} g{row.get('group_index')}",
        "reward": row.get("reward"),
        "loop": row.get("complete_loop"),
        "unscored": row.get("unscored") if row.get("reward") is None else None,
        "link": link,
    }


def _heldout(d: Path, run: dict[str, Any]) -> Any:
    lines = heldout_section(d, missing=run.get("missing_evals") or None)
    return markdown_html("\n".join(lines[2:])) if lines else None  # its own heading is the template's


def section(run_dir: Path) -> Section | None:
    """train rl: the per-step table and figure, the episodes behind each step, the held-out before / after."""
    d = run_dir / FOLDER
    if not ((d / "metrics.jsonl").is_file() or (d / "episodes.jsonl").is_file()):
        return None
    steps, episodes = read_rows(d / "metrics.jsonl"), read_rows(d / "episodes.jsonl")
    run, recipe = _read_json(d / "run.json"), _read_json(d / "recipe.json")
    files: dict = {}
    pages: list[Page] = []
    table = []
    for s in steps:
        behind = [e for e in episodes if e.get("step") == s.get("step")]
        table.append(
            {
                "step": s.get("step"),
                "reward": s.get("reward_mean"),
                "rate": _step_rate(behind),
                "scored": s.get("scored"),
                "episodes": s.get("episodes"),
                "zero": s.get("zero_variance_groups"),
                "groups": s.get("groups"),
                "loss": s.get("loss"),
                "links": [_episode_link(d, e, recipe, files, run_dir, pages) for e in behind],
            }
        )
    figure = None
    if (svg := curve_svg(steps, RL_CURVE)) is not None:
        figure = f"figures/{RL_CURVE.name}.svg"
        files[figure] = svg
    links = {
        name: copy_in(files, run_dir, d / name)
        for name in ("metrics.jsonl", "episodes.jsonl", "run.json", "recipe.json", "rl_report.md")
    }
    for phase in ("before", "after"):
        links[f"eval_{phase}/results.json"] = copy_in(files, run_dir, d / f"eval_{phase}" / "results.json")
    body = render(
        "sections/rl.html.jinja",
        key=KEY,
        table=table,
        figure=figure,
        heldout=_heldout(d, run),
        status=run.get("status"),
        ended=run.get("ended"),
        stop_reason=run.get("stop_reason"),
        links=links,
        folder=FOLDER,
        fmt_rate=fmt_rate,
    )
    summary = f"{len(steps)} step(s)"
    if steps:
        first, last = steps[0], steps[-1]
        summary += f"; mean reward {fmt_num(first.get('reward_mean'))} → {fmt_num(last.get('reward_mean'))}"
        rates = [_step_rate([e for e in episodes if e.get("step") == s.get("step")]) for s in (first, last)]
        summary += f"; complete loops {fmt_rate(rates[0])} → {fmt_rate(rates[1])}"
    if run.get("status"):
        summary += f"; {run['status']}"
    return Section(KEY, "RL in the harness (train rl)", body, summary=summary, files=files, pages=pages)
