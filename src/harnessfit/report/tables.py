"""Side-by-side tables of eval results, in the shape of a published before/after table.

Rows are metrics, columns are models (one results file each), cells are rates with their 95% Wilson interval
and the counts behind them — so a reader sees at once whether a difference is larger than the noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from harnessfit.errors import UserError
from harnessfit.eval.results import RATE_METRICS, EvalResults, fmt_rate, load_results

__all__ = ["compare", "compare_table", "column_labels"]


def column_labels(results: Sequence[EvalResults], paths: Sequence[Path]) -> list[str]:
    """Model names; when two runs share a name, the results folder's name is appended."""
    names = [r.model.get("name") or "?" for r in results]
    return [f"{n} ({Path(p).resolve().parent.name if Path(p).name == 'results.json' else Path(p).name})"
            if names.count(n) > 1 else n for n, p in zip(names, paths, strict=True)]


def _row(label: str, cells: list[str]) -> str:
    return "| " + " | ".join([label, *cells]) + " |"


def compare_table(results: Sequence[EvalResults], labels: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """Markdown table + the same numbers as a JSON-able dict."""
    header = ["| Metric | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    rows: list[str] = []
    data: dict[str, Any] = {"models": list(labels), "metrics": {}}
    for label, field, _ in RATE_METRICS:
        cells = [r.aggregates.get("rates", {}).get(field, {}) for r in results]
        rows.append(_row(label, [fmt_rate(c) if c else "n/a" for c in cells]))
        data["metrics"][field] = cells
    valid = [r.aggregates.get("tool_calls", {}) for r in results]
    rows.append(_row("Valid tool calls", [fmt_rate(v["valid_rate"]) if v else "n/a" for v in valid]))
    rows.append(_row("Double-encoded arguments (calls)", [str(v.get("double_encoded_arguments", "n/a")) for v in valid]))
    data["metrics"]["tool_calls"] = valid
    ks = sorted({k for r in results for k in r.aggregates.get("pass_at_k", {})}, key=int)
    for key, sym in (("pass_at_k", "@"), ("pass_hat_k", "^")):
        for k in ks:
            vals = [r.aggregates.get(key, {}).get(k) for r in results]
            rows.append(_row(f"pass{sym}{k}", ["n/a" if v is None else f"{100 * v:.0f}%" for v in vals]))
            data["metrics"][f"{key}_{k}"] = vals
    means = [r.aggregates.get("means", {}) for r in results]
    for field, label in (("turns", "Mean turns"), ("tokens_total", "Mean tokens"), ("wall_seconds", "Mean wall s")):
        rows.append(_row(label, ["n/a" if m.get(field) is None else f"{m[field]:g}" for m in means]))
    rows.append(_row("Failures", [", ".join(f"{k} {v}" for k, v in r.aggregates.get("failures", {}).items()) or "–"
                                  for r in results]))
    rows.append(_row("Scored / unscored episodes",
                     [f"{r.aggregates.get('scored', 0)} / {r.aggregates.get('unscored', 0)}" for r in results]))
    rows.append(_row("Sandbox", [r.sandbox for r in results]))
    return "\n".join(header + rows) + "\n", data


def compare(results_paths: Sequence[Path], out_md: Path, *, title: str = "Before / after in the real harness") -> Path:
    """Write a side-by-side Markdown table (and ``<out>.json``) of two or more results files; returns out_md."""
    paths = [Path(p) for p in results_paths]
    if len(paths) < 2:
        raise UserError("compare needs at least two results files")
    results = [load_results(p) for p in paths]
    not_done = [str(p) for p, r in zip(paths, results, strict=True) if r.status != "success"]
    if not_done:
        raise UserError(f"results not finished successfully (status is not 'success'): {', '.join(not_done)}")
    suites = {r.suite.get("sha256") for r in results}
    labels = column_labels(results, paths)
    table, data = compare_table(results, labels)
    note = "" if len(suites) == 1 else "\n> Warning: the runs used different task suites; rates are not comparable.\n"
    suite = results[0].suite
    text = (f"# {title}\n\nSuite `{suite.get('name')}` ({len(suite.get('tasks', []))} tasks), "
            f"Pi {results[0].pi_version}. Cells: rate [95% Wilson CI] (successes/n).\n{note}\n{table}")
    out_md = Path(out_md)
    out_md.parent.mkdir(parents=True, exist_ok=True)
    out_md.write_text(text, encoding="utf-8")
    out_md.with_suffix(".json").write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    return out_md
