"""Synth section: the sessions the golden solver (and its contrast runs) recorded through the real Pi
(``synth/manifest.json``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson

from harnessfit.report.site import Section, render

__all__ = ["section"]


def section(run_dir: Path) -> Section | None:
    path = run_dir / "synth" / "manifest.json"
    if not path.is_file():
        return None
    m = orjson.loads(path.read_bytes())
    files, skipped = m.get("files") or [], m.get("skipped") or []
    kinds = sorted({f.get("kind") for f in files} | {s.get("kind") for s in skipped})
    kept = Counter(f.get("kind") for f in files)
    dropped = Counter(s.get("kind") for s in skipped)
    double = Counter()
    for f in files:
        double[f.get("kind")] += int(f.get("double_encoded_calls") or 0)
    rows = [{"kind": k, "kept": kept[k], "skipped": dropped[k], "double": double[k]} for k in kinds]
    body = render("sections/synth.html.jinja", m=m, rows=rows, skipped=skipped)
    return Section(
        "synth",
        "Synthesised sessions",
        body,
        summary=f"{len(files)} sessions recorded through the real Pi, {len(skipped)} skipped",
    )
