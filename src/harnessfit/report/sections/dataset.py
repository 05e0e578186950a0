"""Dataset section: what the build kept and dropped (``dataset/manifest.json``), the reject ledger by reason with
one example each (``ledger_summary.json``, ``ledger.jsonl``) and the dataset card (``README.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from harnessfit.report.sections._files import copy_in
from harnessfit.report.site import Section, markdown_html, render

__all__ = ["section", "ledger_examples"]


def ledger_examples(path: Path, reasons: set[str]) -> dict[str, dict[str, Any]]:
    """The first ledger row of each reason in ``reasons`` (reads only as far as needed)."""
    found: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return found
    with path.open("rb") as fh:
        for line in fh:
            if len(found) == len(reasons):
                break
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(row, dict) and row.get("reason") in reasons and row["reason"] not in found:
                found[row["reason"]] = row
    return found


def section(run_dir: Path) -> Section | None:
    d = run_dir / "dataset"
    if not (d / "manifest.json").is_file():
        return None
    m = orjson.loads((d / "manifest.json").read_bytes())
    c = m.get("counts") or {}
    read = c.get("read") or 0
    funnel = [
        (label, c.get(key))
        for label, key in (
            ("trajectories read", "read"),
            ("converted to harness conversations", "converted"),
            ("rejected at conversion", "rejected_convert"),
            ("changed by redaction", "redacted_conversations"),
            ("exact duplicates dropped", "duplicate_exact"),
            ("near duplicates dropped", "duplicate_near"),
            ("kept", "kept"),
        )
        if key in c
    ]
    funnel = [(label, n, (100 * n / read) if read and n is not None else None) for label, n in funnel]
    ledger = orjson.loads((d / "ledger_summary.json").read_bytes()) if (d / "ledger_summary.json").is_file() else {}
    by_reason = ledger.get("by_reason") or c.get("rejected_by_reason") or {}
    examples = ledger_examples(d / "ledger.jsonl", set(by_reason))
    files: dict = {}
    links = {
        name: copy_in(files, run_dir, d / name)
        for name in ("README.md", "manifest.json", "ledger_summary.json", "ledger_summary.md")
    }
    card = (d / "README.md").read_text(encoding="utf-8", errors="replace") if (d / "README.md").is_file() else None
    body = render(
        "sections/dataset.html.jinja",
        m=m,
        c=c,
        funnel=funnel,
        ledger=ledger,
        by_reason=by_reason,
        examples=examples,
        splits=(m.get("splits") or {}),
        red=(m.get("redaction") or {}),
        links=links,
        card=markdown_html(card) if card else None,
    )
    kept = c.get("kept")
    summary = f"{kept} of {read} trajectories kept"
    if read and kept is not None:
        summary += f" ({100 * kept / read:.0f}%)"
    if by_reason:
        summary += f"; {sum(by_reason.values())} ledger rows in {len(by_reason)} reason(s)"
    return Section("dataset", "Dataset build", body, summary=summary, files=files)
