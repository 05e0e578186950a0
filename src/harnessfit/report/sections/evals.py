"""Eval section: every agent-loop results file of the run side by side (before / after), each cell linked to the
episodes behind it, a per-task table linking every episode in one click, and one page per episode (with the
harness's own HTML export of its session beside it: ``Harness.session_export``).

Results files are found at ``RUN_DIR/results.json`` and under ``RUN_DIR/eval/`` (not inside episode folders); a
file that is not an agent-loop results file of ``eval/results.py`` is left to other sections.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harnessfit.errors import UserError
from harnessfit.eval.compare import column_labels, compare_rows
from harnessfit.eval.episode import FAILURES, Episode
from harnessfit.eval.results import RATE_METRICS, EvalResults, harness_title, load_results
from harnessfit.eval.scorers import load_card_or_none
from harnessfit.harness.base import DEFAULT_HARNESS, get_harness
from harnessfit.report.episodes import episode_view
from harnessfit.report.figures import intervals_svg
from harnessfit.report.sections._files import copy_in
from harnessfit.report.site import MARKER, Page, Section, render

__all__ = ["AgentRun", "find_agent_runs", "episode_page_path", "section"]

_RATE_FIELDS = {field: (label, good) for label, field, good in RATE_METRICS}
_SKIP_DIRS = {"episodes", "workspace", "sessions", "home"}  # episode folders: what the agent wrote, not results


@dataclass
class AgentRun:
    """One agent-loop results file of the run."""

    label: str  # column name in the tables (model name, with the folder when two runs share one)
    slug: str  # folder-safe id, unique in the run (the results folder's path)
    path: Path  # results.json
    results: EvalResults

    @property
    def folder(self) -> Path:
        return self.path.parent


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "run"


def _results_files(run_dir: Path) -> Iterator[Path]:
    if (run_dir / "results.json").is_file():
        yield run_dir / "results.json"
    root = run_dir / "eval"
    if not root.is_dir():
        return
    if (root / "results.json").is_file():
        yield root / "results.json"
    # each run folder under eval/ may be a link (``report.locate``'s view of a run): followed at this level only
    for child in sorted(
        p for p in root.iterdir() if p.is_dir() and p.name not in _SKIP_DIRS and not (p / MARKER).exists()
    ):
        for dirpath, dirnames, filenames in os.walk(child):
            dirnames[:] = sorted(
                d for d in dirnames if d not in _SKIP_DIRS and not (Path(dirpath, d) / MARKER).exists()
            )
            if "results.json" in filenames:
                yield Path(dirpath) / "results.json"


def find_agent_runs(run_dir: Path) -> list[AgentRun]:
    """Agent-loop results files of ``run_dir`` in path order (others, e.g. raw suites, are skipped)."""
    found: list[tuple[Path, EvalResults]] = []
    for path in _results_files(run_dir):
        try:
            found.append((path, load_results(path)))
        except (UserError, ValidationError):
            continue
    labels = column_labels([r for _, r in found], [p for p, _ in found])
    runs = []
    for (path, res), label in zip(found, labels, strict=True):
        rel = path.parent.relative_to(run_dir).as_posix()
        slug = _slug(rel.removeprefix("eval/") if rel != "." else "run")
        runs.append(AgentRun(label, slug, path, res))
    return runs


def episode_page_path(run: AgentRun, ep: Episode) -> str:
    return f"episodes/{run.slug}/{_slug(ep.facts.task_id)}/seed-{ep.facts.seed}.html"


def _list_path(run: AgentRun, key: str) -> str:
    return f"eval/{run.slug}/{key}.html"


# which episodes stand behind a cell: (page key, title, filter, the column that marks each episode)
def _selections(run: AgentRun) -> list[tuple[str, str, Callable[[Episode], bool], str | None]]:
    scored: Callable[[Episode], bool] = lambda e: e.metrics is not None  # noqa: E731
    out: list[tuple[str, str, Callable[[Episode], bool], str | None]] = [
        ("all", "All episodes", lambda e: True, None),
        ("unscored", "Unscored episodes (runner or harness error)", lambda e: e.metrics is None, None),
        ("tool_calls", "Scored episodes and their tool calls", scored, None),
        (
            "double_encoded_arguments",
            "Episodes with double-encoded tool-call arguments",
            lambda e: e.metrics is not None and e.metrics.double_encoded_arguments > 0,
            None,
        ),
    ]
    for field, (label, _) in _RATE_FIELDS.items():
        out.append((field, f"{label}: the scored episodes behind the rate", scored, field))
    failed = run.results.aggregates.get("failures") or {}
    for name in (n for n in FAILURES if n in failed):
        out.append(
            (
                f"failure-{name}",
                f"Episodes that failed with {name}",
                lambda e, n=name: e.metrics is not None and e.metrics.failure == n,
                None,
            )
        )
    return out


def _cell_parts(row_key: str, text: str, run: AgentRun) -> list[tuple[str, str | None]]:
    """A table cell as (text, link) parts: the link goes to the page of the episodes behind the cell."""
    if row_key in _RATE_FIELDS or row_key in ("tool_calls", "double_encoded_arguments"):
        return [(text, _list_path(run, row_key))]
    if row_key.startswith(("pass_", "means_")):
        return [(text, _list_path(run, "all"))]
    if row_key == "scored":
        scored, unscored = (run.results.aggregates.get(k, 0) for k in ("scored", "unscored"))
        return [
            (str(scored), _list_path(run, "tool_calls")),
            (" / ", None),
            (str(unscored), _list_path(run, "unscored")),
        ]
    if row_key == "failures":
        fails = run.results.aggregates.get("failures") or {}
        parts: list[tuple[str, str | None]] = []
        for i, (name, n) in enumerate(fails.items()):
            parts += [(", ", None)] if i else []
            parts.append((f"{name} {n}", _list_path(run, f"failure-{name}")))
        return parts or [(text, None)]
    return [(text, None)]


def _episode_row(run: AgentRun, ep: Episode) -> dict[str, Any]:
    f, m = ep.facts, ep.metrics
    caps = [
        name
        for name, hit in (
            ("output", f.killed == "output_cap"),
            ("wall clock", f.killed == "wall_clock"),
            ("turns", f.turn_cap_hit),
        )
        if hit
    ]
    return {
        "task": f.task_id,
        "seed": f.seed,
        "page": episode_page_path(run, ep),
        "m": m,
        "f": f,
        "caps": caps,
        "passed": bool(m and m.complete_loop),
    }


def _episode_pages(run: AgentRun, files: dict, run_dir: Path, card: Any) -> list[Page]:
    pages = []
    spec = run.results.harness
    agent, title = get_harness(spec), harness_title(run.results)
    for ep in run.results.episodes:
        path = episode_page_path(run, ep)
        view = episode_view(run.folder, ep, suite_path=run.results.suite.get("path"), card=card, harness=spec)
        session = run.folder / ep.facts.session_file if ep.facts.session_file else None
        export = None
        made = (
            agent.session_export(session, run.results.pi_version) if session is not None and session.is_file() else None
        )
        if made is not None:
            export = path.removesuffix(".html") + made[0]
            files[export] = made[1]
        raw = {
            "session file": copy_in(files, run_dir, session) if session else None,
            "event stream": copy_in(files, run_dir, run.folder / ep.facts.events_file),
            "stderr": copy_in(files, run_dir, run.folder / ep.facts.stderr_file),
        }
        body = render(
            "episode.html.jinja",
            here=path,
            v=view,
            run=run,
            export=export,
            raw=raw,
            index=_list_path(run, "all"),
            harness_title=title,
        )
        title = f"{ep.facts.task_id} seed {ep.facts.seed} — {run.label}"
        pages.append(Page(path, title, body))
    return pages


def _list_pages(run: AgentRun) -> list[Page]:
    pages = []
    for key, title, keep, flag in _selections(run):
        rows = [_episode_row(run, e) for e in run.results.episodes if keep(e)]
        path = _list_path(run, key)
        flag_label = _RATE_FIELDS[flag][0] if flag else None
        body = render(
            "episode_list.html.jinja",
            here=path,
            run=run,
            title=title,
            rows=rows,
            flag=flag,
            flag_label=flag_label,
            key=key,
        )
        pages.append(Page(path, f"{title} — {run.label}", body))
    return pages


def section(run_dir: Path) -> Section | None:
    runs = find_agent_runs(run_dir)
    if not runs:
        return None
    card = load_card_or_none()  # the default harness's card; a run of another harness is shown with its own
    files: dict = {}
    pages: list[Page] = []
    for run in runs:
        own = (
            card
            if get_harness(run.results.harness).name == DEFAULT_HARNESS
            else load_card_or_none(run.results.pi_version, harness=run.results.harness)
        )
        pages += _episode_pages(run, files, run_dir, own)
        pages += _list_pages(run)
    results = [r.results for r in runs]
    table = [
        {
            "label": row.label,
            "key": row.key,
            "cells": [_cell_parts(row.key, text, run) for text, run in zip(row.cells, runs, strict=True)],
        }
        for row in compare_rows(results)
    ]
    task_ids: list[str] = []
    for r in results:
        task_ids += [t for t in (r.suite.get("tasks") or []) if t not in task_ids]
        task_ids += [e.facts.task_id for e in r.episodes if e.facts.task_id not in task_ids]
    per_task = [
        {
            "task": t,
            "cells": [[_episode_row(run, e) for e in run.results.episodes if e.facts.task_id == t] for run in runs],
        }
        for t in task_ids
    ]
    svg = intervals_svg(
        [label for label, _, _ in RATE_METRICS],
        [r.label for r in runs],
        [[r.results.aggregates.get("rates", {}).get(field) for r in runs] for _, field, _ in RATE_METRICS],
    )
    figure = None
    if svg is not None:
        figure = "figures/eval-rates.svg"
        files[figure] = svg
    links = {
        run.label: {
            "results.json": copy_in(files, run_dir, run.path),
            "results.md": copy_in(files, run_dir, run.folder / "results.md"),
            "episodes": _list_path(run, "all"),
        }
        for run in runs
    }
    compare_md = copy_in(files, run_dir, run_dir / "eval" / "before_after.md")
    suites = {r.suite.get("sha256") for r in results}
    body = render(
        "sections/eval.html.jinja",
        runs=runs,
        table=table,
        per_task=per_task,
        figure=figure,
        links=links,
        compare_md=compare_md,
        mixed_suites=len(suites) > 1,
        suite=results[0].suite,
        pi_version=" / ".join(dict.fromkeys(r.pi_version for r in results)),
        harness_title=harness_title(results[0]),
    )
    loops = []
    for run in runs:
        rate = run.results.aggregates.get("rates", {}).get("complete_loop") or {}
        loops.append(f"{run.label} {rate.get('successes', 0)}/{rate.get('n', 0)}")
    title = "Eval in the real harness: before / after" if len(runs) > 1 else "Eval in the real harness"
    return Section("eval", title, body, summary="complete loop: " + ", ".join(loops), files=files, pages=pages)
