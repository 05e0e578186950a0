"""Run section: the time each step of a pipeline run took (``steps.json``, written by ``harnessfit demo``) and the
run's Markdown report (``report.md``)."""

from __future__ import annotations

from pathlib import Path

import orjson

from harnessfit.report.sections._files import copy_in
from harnessfit.report.site import Section, render

__all__ = ["section", "STEPS_FILE"]

STEPS_FILE = "steps.json"  # {"steps": {"<step name>": seconds, ...}} in the order the steps ran


def section(run_dir: Path) -> Section | None:
    steps_path = run_dir / STEPS_FILE
    steps = (orjson.loads(steps_path.read_bytes()).get("steps") or {}) if steps_path.is_file() else {}
    files: dict = {}
    report_md = copy_in(files, run_dir, run_dir / "report.md")
    if not steps and not report_md:
        return None
    total = round(sum(float(v) for v in steps.values()), 1)
    body = render("sections/run.html.jinja", steps=steps, total=total, report_md=report_md)
    summary = f"{len(steps)} steps in {total:g} s" if steps else "Markdown report"
    return Section("run", "Pipeline run", body, summary=summary, files=files)
