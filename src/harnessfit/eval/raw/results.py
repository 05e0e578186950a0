"""Raw-suite results: every answer (completion, extracted code, three checks) and the suite's counts, as JSON and
Markdown, in the conventions of ``eval agent``'s results: a ``version``, a ``status`` (``started`` while running,
then ``success`` or ``error``), 95% Wilson intervals, and unscored answers (no completion came back, or a checker
broke on the answer) listed and counted but kept out of every rate.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from harnessfit.eval.files import ResultsHeader, md_cell
from harnessfit.eval.raw.findings import Check
from harnessfit.eval.results import fmt_rate
from harnessfit.eval.side_by_side import finished_runs, rate_rows, write_comparison
from harnessfit.eval.stats import rate

__all__ = [
    "RAW_RESULTS_VERSION",
    "RAW_METRICS",
    "Completion",
    "RawAnswer",
    "RawResults",
    "aggregate_raw",
    "write_raw_results",
    "load_raw_results",
    "render_raw_markdown",
    "compare_raw",
]

RAW_RESULTS_VERSION = 1

# (label, field): every one a share of scored answers.
RAW_METRICS: tuple[tuple[str, str], ...] = (
    ("Output shape (one code block, nothing else)", "output_shape"),
    ("Compiles (no compiler error)", "compiles"),
    ("Compile-clean (no error, no warning)", "compile_clean"),
    ("Policy-clean", "policy_clean"),
    ("Fully clean (shape + compile + policy)", "fully_clean"),
)


class Completion(BaseModel):
    text: str
    reasoning: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    wall_seconds: float = 0.0


class RawAnswer(BaseModel):
    """One prompt x seed: what came back, the code the extraction rule took from it, and the checks of that code."""

    prompt_id: str
    seed: int
    status: Literal["success", "error"] = "success"
    error: str | None = None
    completion: Completion | None = None
    code: str | None = None
    code_source: str | None = None
    shape: Check | None = None
    compile: Check | None = None
    policy: Check | None = None
    compiles: bool | None = None
    fully_clean: bool | None = None

    @property
    def scored(self) -> bool:
        return self.status == "success" and self.policy is not None

    def value(self, field: str) -> bool:
        return {
            "output_shape": self.shape.clean,
            "compiles": bool(self.compiles),
            "compile_clean": self.compile.clean,
            "policy_clean": self.policy.clean,
            "fully_clean": bool(self.fully_clean),
        }[field]


class RawResults(ResultsHeader):
    what: ClassVar[str] = "raw results file"
    kind: Literal["raw"] = "raw"
    version: int = RAW_RESULTS_VERSION
    model: dict[str, str]
    suite: dict[str, Any]
    config: dict[str, Any]
    checker: dict[str, Any] = Field(default_factory=dict)
    answers: list[RawAnswer] = Field(default_factory=list)
    aggregates: dict[str, Any] = Field(default_factory=dict)

    def markdown(self) -> str:
        return render_raw_markdown(self)


def aggregate_raw(answers: list[RawAnswer]) -> dict[str, Any]:
    """The four counts (and ``compiles``) with Wilson intervals, findings by code, per-prompt counts."""
    scored = [a for a in answers if a.scored]
    n = len(scored)
    out: dict[str, Any] = {"answers": len(answers), "scored": n, "unscored": len(answers) - n}
    out["rates"] = {field: rate(sum(a.value(field) for a in scored), n).as_dict() for _, field in RAW_METRICS}
    out["stopped_at_token_cap"] = sum(1 for a in scored if a.completion and a.completion.finish_reason == "length")
    out["unscored_reasons"] = dict(Counter((a.error or "unknown").split(":")[0] for a in answers if not a.scored))
    findings: dict[str, dict[str, int]] = {}
    for check in ("shape", "compile", "policy"):
        counts = Counter(code for a in scored for code in {f.code for f in getattr(a, check).counted()})
        findings[check] = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    out["answers_with_finding"] = findings
    per: dict[str, dict[str, int]] = defaultdict(lambda: {"n": 0, **{f: 0 for _, f in RAW_METRICS}})
    for a in scored:
        row = per[a.prompt_id]
        row["n"] += 1
        for _, field in RAW_METRICS:
            row[field] += a.value(field)
    out["per_prompt"] = dict(sorted(per.items()))
    return out


def write_raw_results(results: RawResults, out_dir: Path) -> Path:
    """``results.json`` always, ``results.md`` once the run has finished."""
    return results.write(out_dir)


def load_raw_results(path: Path) -> RawResults:
    return RawResults.load(path)


def _mark(ok: bool | None) -> str:
    return "n/a" if ok is None else ("yes" if ok else "no")


def render_raw_markdown(results: RawResults) -> str:
    agg, suite = results.aggregates, results.suite
    tools = ", ".join(
        f"{k} {v}"
        for k, v in results.checker.items()
        if k in ("svelte", "@sveltejs/mcp", "node", "python", "ruff") and v
    )
    lines = [
        f"# Raw suite: {md_cell(results.model.get('name', '?'))} on {md_cell(suite.get('name', '?'))}",
        "",
        f"- status: **{results.status}**" + (f" — {md_cell(results.error, 400)}" if results.error else ""),
        f"- language {suite.get('language')}; suite sha256 `{str(suite.get('sha256', ''))[:16]}…`; checkers: {tools}",
        f"- seeds {results.config.get('seeds')}, temperature {results.config.get('temperature')}, "
        f"max tokens {results.config.get('max_tokens')}; answers {agg.get('answers', 0)} "
        f"(scored {agg.get('scored', 0)}, unscored {agg.get('unscored', 0)}); "
        f"stopped at the token cap: {agg.get('stopped_at_token_cap', 0)}",
        "",
        "| Check | Clean [95% CI] (answers) |",
        "|---|---|",
    ]
    for label, field in RAW_METRICS:
        if field in agg.get("rates", {}):
            lines.append(f"| {label} | {fmt_rate(agg['rates'][field])} |")
    lines += [
        "",
        "| Prompt | Seed | Shape | Compile | Policy | Fully clean | Finish | Findings |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for a in results.answers:
        if not a.scored:
            lines.append(f"| {md_cell(a.prompt_id)} | {a.seed} | unscored | | | | | {md_cell(a.error or '')} |")
            continue
        codes = [f.code for c in (a.shape, a.compile, a.policy) for f in c.counted()]
        lines.append(
            f"| {md_cell(a.prompt_id)} | {a.seed} | {_mark(a.shape.clean)} | {_mark(a.compile.clean)} | "
            f"{_mark(a.policy.clean)} | {_mark(a.fully_clean)} | "
            f"{md_cell(a.completion.finish_reason if a.completion else '')} | "
            f"{md_cell(', '.join(dict.fromkeys(codes)))} |"
        )
    for check, counts in agg.get("answers_with_finding", {}).items():
        if counts:
            lines += [
                "",
                f"{check.capitalize()} findings (answers): "
                + ", ".join(f"{md_cell(k)} {v}" for k, v in counts.items()),
            ]
    return "\n".join(lines) + "\n"


def compare_raw(paths: Sequence[Path], out_md: Path, labels: Sequence[str] | None = None) -> Path:
    """Side-by-side Markdown (and ``<out>.json``) of two or more raw runs: the published before/after table."""
    runs = finished_runs(paths, load_raw_results, "raw")
    note = (
        ""
        if len({r.suite.get("sha256") for r in runs}) == 1
        else "\n> Warning: the runs answered different suites; counts are not comparable.\n"
    )
    rows, data = rate_rows(runs, paths, labels, RAW_METRICS, first="Check", counted="answers")
    text = (
        f"# Raw suite `{md_cell(runs[0].suite.get('name'))}` side by side\n\nCells: clean share [95% Wilson CI] "
        f"(answers).\n{note}\n" + "\n".join(rows) + "\n"
    )
    return write_comparison(out_md, text, data)
