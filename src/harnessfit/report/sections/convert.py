"""Convert section: a bare ``harnessfit convert`` output (``convert/yield.json``, ``ledger_summary.json``): tool calls
read → labels per source format, and the blockers that would unlock the most calls. A build shows the same in its
dataset section, so this one appears only for a run with a convert folder."""

from __future__ import annotations

from pathlib import Path

import orjson

from harnessfit.report.sections._files import copy_in
from harnessfit.report.site import Section, render

__all__ = ["section"]


def section(run_dir: Path) -> Section | None:
    d = run_dir / "convert"
    if not (d / "yield.json").is_file():
        return None
    y = orjson.loads((d / "yield.json").read_bytes())
    total = y.get("total") or {}
    formats = [
        (name, f.get("calls", 0), f.get("labels", 0))
        for name, f in sorted((y.get("by_format") or {}).items())
        if isinstance(f, dict)
    ]
    blockers = [b for b in (y.get("blockers") or []) if isinstance(b, dict)][:8]
    files: dict = {}
    links = {name: copy_in(files, run_dir, d / name) for name in ("yield.md", "yield.json", "ledger_summary.md")}
    body = render("sections/convert.html.jinja", total=total, formats=formats, blockers=blockers, links=links)
    summary = f"{total.get('calls', 0)} tool calls read → {total.get('labels', 0)} labels"
    return Section("convert", "Conversion yield", body, summary=summary, files=files)
