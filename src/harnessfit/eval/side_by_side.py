"""The side-by-side table of two or more finished runs of one eval kind (``eval raw``, ``probe``): the runs, checked
finished, one row per rate metric in Wilson-interval cells, the scored/unscored row, and the ``<out>.md`` +
``<out>.json`` pair the report reads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from harnessfit.errors import UserError
from harnessfit.eval.files import md_cell
from harnessfit.eval.results import fmt_rate

__all__ = ["finished_runs", "rate_rows", "write_comparison"]


def finished_runs(paths: Sequence[Path], load: Callable[[Path], Any], what: str) -> list[Any]:
    """The runs at ``paths`` (at least two, each finished successfully), loaded with ``load``; ``what`` names the
    kind in the one-line errors."""
    if len(paths) < 2:
        raise UserError(f"a {what} comparison needs at least two {what} results")
    runs = [load(Path(p)) for p in paths]
    bad = [str(p) for p, r in zip(paths, runs, strict=True) if r.status != "success"]
    if bad:
        raise UserError(f"{what} results not finished successfully: {', '.join(bad)}")
    return runs


def rate_rows(
    runs: Sequence[Any],
    paths: Sequence[Path],
    labels: Sequence[str] | None,
    metrics: Sequence[tuple[str, str]],
    *,
    first: str,
    counted: str,
) -> tuple[list[str], dict[str, Any]]:
    """The Markdown table (header ``first`` + one column per run, one row per ``(label, key)`` of ``metrics`` from
    ``aggregates["rates"]``, then scored / unscored ``counted``) and its JSON form."""
    names = list(labels) if labels else [str(r.model.get("name")) for r in runs]
    rows = ["| " + first + " | " + " | ".join(md_cell(n) for n in names) + " |", "|---|" + "---|" * len(runs)]
    data: dict[str, Any] = {"models": names, "paths": [str(p) for p in paths], "metrics": {}}
    for label, key in metrics:
        cells = [r.aggregates["rates"][key] for r in runs]
        data["metrics"][key] = cells
        rows.append(f"| {label} | " + " | ".join(fmt_rate(c) for c in cells) + " |")
    rows.append(
        f"| Scored / unscored {counted} | "
        + " | ".join(f"{r.aggregates['scored']} / {r.aggregates['unscored']}" for r in runs)
        + " |"
    )
    return rows, data


def write_comparison(out_md: Path, text: str, data: dict[str, Any]) -> Path:
    """``out_md`` and ``out_md`` with ``.json`` beside it; returns ``out_md``."""
    out_md = Path(out_md)
    out_md.parent.mkdir(parents=True, exist_ok=True)
    out_md.write_text(text, encoding="utf-8")
    out_md.with_suffix(".json").write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    return out_md
