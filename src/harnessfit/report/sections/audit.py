"""Audit section: token counts with the real tokenizer and template, record lengths against the candidate caps,
the recommended cap, the trainable actions' tokens as per-action records and as chains (with the chain breaks), and
the loss-mask checks (``audit/audit.json``, ``audit/lengths.png``, ``audit/breaks.jsonl``)."""

from __future__ import annotations

from pathlib import Path

import orjson

from harnessfit.report.sections._files import copy_in
from harnessfit.report.site import Section, render

__all__ = ["section"]


def section(run_dir: Path) -> Section | None:
    d = run_dir / "audit"
    if not (d / "audit.json").is_file():
        return None
    a = orjson.loads((d / "audit.json").read_bytes())
    files: dict = {}
    figure = copy_in(files, run_dir, d / "lengths.png")
    links = {
        name: copy_in(files, run_dir, d / name)
        for name in ("audit.md", "audit.json", "violations.jsonl", "breaks.jsonl")
    }
    violations = sum(int(f.get("count") or 0) for f in (a.get("violations") or {}).values())
    problems = sum(int(f.get("count") or 0) for f in (a.get("problems") or {}).values())
    body = render(
        "sections/audit.html.jinja", a=a, figure=figure, links=links, violations=violations, problems=problems
    )
    summary = (
        f"{a.get('records_clean')} of {a.get('records_read')} records clean, {violations} mask violation(s); "
        f"recommended cap {a.get('recommended_cap')}"
    )
    ratio = (a.get("layouts_total") or {}).get("chain_to_record_ratio")
    if ratio is not None:
        summary += f"; chains take {ratio:.1%} of the per-action records' tokens"
    return Section("audit", "Token audit", body, summary=summary, files=files)
