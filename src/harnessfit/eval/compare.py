"""Side-by-side tables of eval results, in the shape of a published before/after table.

Rows are metrics, columns are models (one results file each), cells are rates with their 95% Wilson interval
and the counts behind them — so a reader sees at once whether a difference is larger than the noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harnessfit.errors import UserError
from harnessfit.eval.results import RATE_METRICS, EvalResults, fmt_rate, harness_title, load_results

__all__ = ["compare", "compare_table", "compare_rows", "Row", "column_labels"]


def column_labels(results: Sequence[EvalResults], paths: Sequence[Path]) -> list[str]:
    """Model names; when two runs share a name, the results folder's name is appended."""
    names = [r.model.get("name") or "?" for r in results]
    return [
        f"{n} ({Path(p).resolve().parent.name if Path(p).name == 'results.json' else Path(p).name})"
        if names.count(n) > 1
        else n
        for n, p in zip(names, paths, strict=True)
    ]


@dataclass
class Row:
    """One metric across models: ``key`` names what the cells count (an episode field, ``tool_calls``,
    ``double_encoded_arguments``, ``pass_at_k_<k>``, ``means_<field>``, ``failures``, ``scored``, ``sandbox``)."""

    label: str
    key: str
    cells: list[str]
    values: list[Any]


def compare_rows(results: Sequence[EvalResults]) -> list[Row]:
    """The rows of a side-by-side table: rates with 95% Wilson intervals, tool calls, pass@k/pass^k, means,
    failures, scored/unscored and the sandbox (one definition for the Markdown and the HTML report)."""
    rows: list[Row] = []
    for label, field, _ in RATE_METRICS:
        cells = [r.aggregates.get("rates", {}).get(field, {}) for r in results]
        rows.append(Row(label, field, [fmt_rate(c) if c else "n/a" for c in cells], cells))
    valid = [r.aggregates.get("tool_calls", {}) for r in results]
    rows.append(
        Row("Valid tool calls", "tool_calls", [fmt_rate(v["valid_rate"]) if v else "n/a" for v in valid], valid)
    )
    rows.append(
        Row(
            "Double-encoded arguments (calls)",
            "double_encoded_arguments",
            [str(v.get("double_encoded_arguments", "n/a")) for v in valid],
            [v.get("double_encoded_arguments") for v in valid],
        )
    )
    ks = sorted({k for r in results for k in r.aggregates.get("pass_at_k", {})}, key=int)
    for key, sym in (("pass_at_k", "@"), ("pass_hat_k", "^")):
        for k in ks:
            vals = [r.aggregates.get(key, {}).get(k) for r in results]
            rows.append(
                Row(f"pass{sym}{k}", f"{key}_{k}", ["n/a" if v is None else f"{100 * v:.0f}%" for v in vals], vals)
            )
    means = [r.aggregates.get("means", {}) for r in results]
    for field, label in (("turns", "Mean turns"), ("tokens_total", "Mean tokens"), ("wall_seconds", "Mean wall s")):
        vals = [m.get(field) for m in means]
        rows.append(Row(label, f"means_{field}", ["n/a" if v is None else f"{v:g}" for v in vals], vals))
    fails = [r.aggregates.get("failures", {}) for r in results]
    rows.append(Row("Failures", "failures", [", ".join(f"{k} {v}" for k, v in f.items()) or "–" for f in fails], fails))
    scored = [(r.aggregates.get("scored", 0), r.aggregates.get("unscored", 0)) for r in results]
    rows.append(Row("Scored / unscored episodes", "scored", [f"{a} / {b}" for a, b in scored], scored))
    rows.append(Row("Sandbox", "sandbox", [r.sandbox for r in results], [r.sandbox for r in results]))
    return rows


def compare_table(results: Sequence[EvalResults], labels: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """Markdown table + the same numbers as a JSON-able dict."""
    rows = compare_rows(results)
    lines = ["| Metric | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    lines += ["| " + " | ".join([row.label, *row.cells]) + " |" for row in rows]
    data: dict[str, Any] = {"models": list(labels), "metrics": {}}
    for row in rows:
        if row.key in {f for _, f, _ in RATE_METRICS} or row.key == "tool_calls" or row.key.startswith("pass_"):
            data["metrics"][row.key] = row.values
    return "\n".join(lines) + "\n", data


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
    versions = [r.pi_version for r in results]
    title_of = harness_title(results[0])
    if len(set(versions)) > 1:  # a legitimate comparison (one model under two versions), but never one named for all
        note += (
            f"\n> Note: the runs used different {title_of} versions (per column: " + ", ".join(versions) + "); a "
            "difference mixes the model and the harness.\n"
        )
    suite = results[0].suite
    text = (
        f"# {title}\n\nSuite `{suite.get('name')}` ({len(suite.get('tasks', []))} tasks), "
        f"{title_of} {' / '.join(dict.fromkeys(versions))}. Cells: rate [95% Wilson CI] (successes/n).\n{note}\n"
        f"{table}"
    )
    out_md = Path(out_md)
    out_md.parent.mkdir(parents=True, exist_ok=True)
    out_md.write_text(text, encoding="utf-8")
    out_md.with_suffix(".json").write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    return out_md
