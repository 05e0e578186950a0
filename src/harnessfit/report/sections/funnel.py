"""Funnel section: the whole run's counts in one table, from the tool calls read to the actions trained
(``harnessfit.pipeline.funnel`` reads them from what each stage wrote), with a banner when a run learned from very
little (fewer than ``FEW_ACTIONS`` actions trained) or its GRPO groups all had zero reward variance."""

from __future__ import annotations

from pathlib import Path

from harnessfit.pipeline.funnel import read_funnel
from harnessfit.report.site import Section, render

__all__ = ["section"]


def _stage(run_dir: Path, name: str) -> Path | None:
    return run_dir / name if (run_dir / name).is_dir() else None


def section(run_dir: Path) -> Section | None:
    convert = _stage(run_dir, "dataset") or _stage(run_dir, "convert")  # a build's yield, else a bare convert's
    funnel = read_funnel(
        dataset=convert, audit=_stage(run_dir, "audit"), train=_stage(run_dir, "train"), grpo=_stage(run_dir, "grpo")
    )
    if len(funnel.steps) < 2:
        return None
    body = render("sections/funnel.html.jinja", steps=funnel.steps, warnings=funnel.warnings)
    first, last = funnel.steps[0], funnel.steps[-1]
    summary = f"{first.count} {first.unit} read → {last.count} {last.unit} ({last.what})"
    if funnel.warnings:
        summary += f"; {len(funnel.warnings)} warning(s)"
    return Section("funnel", "Data funnel: from calls read to actions trained", body, summary=summary)
