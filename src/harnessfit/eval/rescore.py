"""Re-scoring a finished ``eval agent`` run with the scorers as they are now (``eval/scorers.py``).

Every built-in metric is computed from what the episode recorded (the session file, Pi's event stream, the
checker's output, the runner's facts), never from anything live, so a scorer corrected after a run applies to the
run as it stands: ``harnessfit eval rescore RUN`` scores each finished episode again, recomputes the aggregates and
rewrites ``results.json`` / ``results.md``, and says which rates changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessfit.errors import UserError
from harnessfit.eval.episode import Episode
from harnessfit.eval.record import load_card_or_none
from harnessfit.eval.results import EvalResults, aggregate, load_results, write_results
from harnessfit.eval.scorers import score_episode
from harnessfit.eval.task import load_task

__all__ = ["rescore", "rate_changes"]


def _suite_dir(results: EvalResults, suite: Path | None) -> Path:
    where = suite or Path(str(results.suite.get("path") or ""))
    if not where.is_dir():
        raise UserError(f"{where}: the suite this run used is not there; pass --suite DIR (the same tasks)")
    return where


def rescore(run: Path, suite: Path | None = None) -> tuple[EvalResults, EvalResults]:
    """(before, after) for the run at ``run`` (its folder or its results.json); the folder is rewritten."""
    path = run / "results.json" if run.is_dir() else run
    before = load_results(path)
    after = before.model_copy(deep=True)
    suite_dir = _suite_dir(before, suite)
    card = load_card_or_none(harness=before.harness)
    episodes: list[Episode] = []
    for ep in after.episodes:
        if ep.facts.status == "success":
            task = load_task(suite_dir / ep.facts.task_id)
            ep = Episode(facts=ep.facts, metrics=score_episode(ep.facts, task, path.parent, card, before.harness))
        episodes.append(ep)
    after.episodes = episodes
    after.aggregates = aggregate(episodes, int(before.config.get("seeds") or 1))
    write_results(after, path.parent)
    return before, after


def rate_changes(before: EvalResults, after: EvalResults) -> list[str]:
    """One line per aggregate that changed: rates (successes/n) and the tool-call totals."""
    lines = []
    old: dict[str, Any] = before.aggregates.get("rates", {})
    for name, rate in after.aggregates.get("rates", {}).items():
        was = old.get(name) or {}
        if (was.get("successes"), was.get("n")) != (rate.get("successes"), rate.get("n")):
            lines.append(f"{name}: {was.get('successes')}/{was.get('n')} -> {rate.get('successes')}/{rate.get('n')}")
    for key in ("total", "valid", "invalid"):
        was, now = before.aggregates.get("tool_calls", {}).get(key), after.aggregates.get("tool_calls", {}).get(key)
        if was != now:
            lines.append(f"tool calls {key}: {was} -> {now}")
    return lines
