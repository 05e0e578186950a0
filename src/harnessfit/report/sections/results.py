"""A generic section for results files in ``eval/results.py``'s conventions (``version``, ``status``, ``model``,
``suite``, ``aggregates``), for the eval kinds that are not the agent loop (raw one-shot suites, pairwise judging,
base-model probes): one column per file, one row per aggregate — rates (dicts with ``rate``, ``ci95_low``,
``ci95_high``, ``successes``, ``n``) with their 95% interval, other numbers as they are, nested dicts flattened
to ``a.b`` rows.

``results_table_section("eval/raw/*/results.json", "Raw one-shot suites", key="raw")`` makes the section function;
add it to ``harnessfit.report.sections.SECTIONS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from harnessfit.report.sections._files import copy_in
from harnessfit.report.site import Section, fmt_num, fmt_rate, render

__all__ = ["results_table_section", "is_rate", "flatten_aggregates"]


def is_rate(v: Any) -> bool:
    return isinstance(v, Mapping) and {"rate", "ci95_low", "ci95_high", "n"} <= set(v)


def flatten_aggregates(agg: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"rates.complete_loop": {rate…}, "means.turns": 3.1, …}``: rates and numbers, nested dicts flattened."""
    out: dict[str, Any] = {}
    for k, v in agg.items():
        name = f"{prefix}{k}"
        if is_rate(v) or (isinstance(v, (int, float)) and not isinstance(v, bool)) or v is None:
            out[name] = v
        elif isinstance(v, Mapping):
            out.update(flatten_aggregates(v, f"{name}."))
    return out


def _cell(v: Any) -> str:
    if is_rate(v):
        return fmt_rate(dict(v))
    return fmt_num(v)


def results_table_section(
    patterns: str | Sequence[str], title: str, *, key: str, kind: str | None = None
) -> Callable[[Path], Section | None]:
    """The section function for the results files matching ``patterns`` (globs relative to RUN_DIR); with ``kind``,
    only files whose ``kind`` field is that value (raw, pairwise, probe)."""
    pats = [patterns] if isinstance(patterns, str) else list(patterns)

    def section(run_dir: Path) -> Section | None:
        paths = sorted({p for pat in pats for p in run_dir.glob(pat) if p.is_file()})
        docs = []
        for p in paths:
            try:
                data = orjson.loads(p.read_bytes())
            except orjson.JSONDecodeError:
                continue
            if (
                isinstance(data, dict)
                and isinstance(data.get("aggregates"), dict)
                and (kind is None or data.get("kind") == kind)
            ):
                docs.append((p, data))
        if not docs:
            return None
        files: dict = {}
        columns = []
        for p, data in docs:
            model = data.get("model") if isinstance(data.get("model"), dict) else {}
            columns.append(
                {
                    "label": model.get("name") or p.parent.name,
                    "status": data.get("status"),
                    "error": data.get("error"),
                    "suite": (data.get("suite") or {}).get("name") if isinstance(data.get("suite"), dict) else None,
                    "link": copy_in(files, run_dir, p),
                    "flat": flatten_aggregates(data["aggregates"]),
                }
            )
        names: list[str] = []
        for c in columns:
            names += [n for n in c["flat"] if n not in names]
        rows = [
            {"name": n, "cells": [_cell(c["flat"].get(n)) if n in c["flat"] else "" for c in columns]} for n in names
        ]
        body = render("sections/results.html.jinja", columns=columns, rows=rows)
        return Section(
            key, title, body, summary=f"{len(columns)} results file(s), {len(rows)} aggregate rows", files=files
        )

    section.__doc__ = f"{title}: aggregates of {', '.join(pats)} side by side."
    return section
