"""Probe results: every sample (reply text, calls with their violations, figures) and the shares, with 95% Wilson
intervals; samples whose request failed are unscored (listed, counted, kept out of every share). Plus the
side-by-side table of two or more probe runs (a tuned model beside its base).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from harnessfit.eval.files import ResultsHeader, md_cell
from harnessfit.eval.probe.probes import FLAGS
from harnessfit.eval.results import fmt_rate
from harnessfit.eval.side_by_side import finished_runs, rate_rows, write_comparison
from harnessfit.eval.stats import rate

__all__ = [
    "PROBE_RESULTS_VERSION",
    "PROBE_METRICS",
    "ProbeSample",
    "ProbeResults",
    "aggregate_probes",
    "write_probe_results",
    "load_probe_results",
    "compare_probes",
]

PROBE_RESULTS_VERSION = 1

# (label, key in aggregates["rates"]); the denominator of each is in aggregates["rates"][key]["n"]
PROBE_METRICS: tuple[tuple[str, str], ...] = (
    ("Turns with a tool call in the template's format", "tool_call"),
    ("… among turns that need a tool", "tool_call_when_needed"),
    ("Answered without a tool when one is needed", "answered_without_tool"),
    ("Tool call when none is needed", "unneeded_tool_call"),
    ("First call is the expected tool (turns that need one)", "right_tool"),
    ("Malformed tool-call block (tag the server could not parse)", "malformed_tool_call"),
    ("Tool call written outside the template's format", "untagged_tool_call"),
    ("Valid tool calls (card validator, calls)", "valid_call"),
    ("Double-encoded arguments (calls)", "double_encoded"),
    ("`<think>` text or reasoning", "think"),
    ("Stopped at end of turn", "stopped"),
    ("Ran to the token cap", "hit_token_cap"),
)


class ProbeSample(BaseModel):
    probe_id: str
    sample: int
    status: Literal["success", "error"] = "success"
    error: str | None = None
    content: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    completion_tokens: int | None = None
    wall_seconds: float | None = None
    calls: list[dict[str, Any]] = Field(default_factory=list)
    flags: dict[str, bool] = Field(default_factory=dict)


class ProbeResults(ResultsHeader):
    what: ClassVar[str] = "probe results file"
    kind: Literal["probe"] = "probe"
    version: int = PROBE_RESULTS_VERSION
    model: dict[str, Any]
    probes: dict[str, Any]
    card: dict[str, str]
    harness: str | None = None  # pi@VERSION of ``card``; a trained model's own harness agrees with it
    config: dict[str, Any]
    samples: list[ProbeSample] = Field(default_factory=list)
    aggregates: dict[str, Any] = Field(default_factory=dict)

    def markdown(self) -> str:
        return render_probe_markdown(self)


def aggregate_probes(samples: list[ProbeSample], needs: dict[str, bool], expects: dict[str, str | None]) -> dict:
    scored = [s for s in samples if s.status == "success"]
    need = [s for s in scored if needs[s.probe_id]]
    no_need = [s for s in scored if not needs[s.probe_id]]
    expected = [s for s in need if expects.get(s.probe_id)]

    def share(flag: str, among: list[ProbeSample]) -> dict[str, Any]:
        return rate(sum(1 for s in among if s.flags[flag]), len(among)).as_dict()

    calls = [c for s in scored for c in s.calls]
    errors_of = [[v["code"] for v in c["violations"] if v["severity"] == "error"] for c in calls]
    valid = sum(1 for e in errors_of if not e)
    double = sum(1 for e in errors_of if "arguments_double_encoded" in e)
    rates = {
        "tool_call": share("tool_call", scored),
        "tool_call_when_needed": share("tool_call", need),
        "answered_without_tool": share("answered_without_tool", need),
        "unneeded_tool_call": share("unneeded_tool_call", no_need),
        "right_tool": share("right_tool", expected),
        "malformed_tool_call": share("malformed_tool_call", scored),
        "untagged_tool_call": share("untagged_tool_call", scored),
        "valid_call": rate(valid, len(calls)).as_dict(),
        "double_encoded": rate(double, len(calls)).as_dict(),
        "think": share("think", scored),
        "stopped": share("stopped", scored),
        "hit_token_cap": share("hit_token_cap", scored),
    }
    per: dict[str, dict[str, int]] = defaultdict(lambda: {"n": 0, **{f: 0 for f in FLAGS}})
    for s in scored:
        row = per[s.probe_id]
        row["n"] += 1
        for f in FLAGS:
            row[f] += s.flags[f]
    warnings = Counter(v["code"] for c in calls for v in c["violations"] if v["severity"] == "warning")
    return {
        "samples": len(samples),
        "scored": len(scored),
        "unscored": len(samples) - len(scored),
        "rates": rates,
        "calls": {
            "total": len(calls),
            "valid": valid,
            "invalid": len(calls) - valid,
            "double_encoded": double,
            "invalid_by_reason": dict(sorted(Counter(c for e in errors_of for c in e).items())),
            "warnings_by_reason": dict(sorted(warnings.items())),
        },
        "per_probe": dict(sorted(per.items())),
    }


def write_probe_results(results: ProbeResults, out_dir: Path) -> Path:
    return results.write(out_dir)


def load_probe_results(path: Path) -> ProbeResults:
    return ProbeResults.load(path)


def render_probe_markdown(results: ProbeResults) -> str:
    agg = results.aggregates
    lines = [
        f"# Probes: {md_cell(results.model.get('name', '?'))} on {md_cell(results.probes.get('name', '?'))}",
        "",
        f"- status: **{results.status}**" + (f" — {md_cell(results.error, 400)}" if results.error else ""),
        f"- card {results.card.get('id')}; {results.config.get('samples')} samples per probe, temperature "
        f"{results.config.get('temperature')}, max tokens {results.config.get('max_tokens')}; samples "
        f"{agg.get('samples', 0)} (scored {agg.get('scored', 0)}, unscored {agg.get('unscored', 0)})",
        "",
        "| Figure | Share [95% CI] (count/n) |",
        "|---|---|",
    ]
    for label, key in PROBE_METRICS:
        if key in agg.get("rates", {}):
            lines.append(f"| {label} | {fmt_rate(agg['rates'][key])} |")
    calls = agg.get("calls", {})
    if calls.get("invalid_by_reason"):
        lines += [
            "",
            "Invalid tool calls by the card's reason codes: "
            + ", ".join(f"{md_cell(k)} {v}" for k, v in calls["invalid_by_reason"].items()),
        ]
    if agg.get("per_probe"):
        lines += [
            "",
            "| Probe | n | Tool call | Without tool | Malformed | Think | Stopped | Token cap |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for pid, row in agg["per_probe"].items():
            lines.append(
                f"| {md_cell(pid)} | {row['n']} | {row['tool_call']} | {row['answered_without_tool']} | "
                f"{row['malformed_tool_call']} | {row['think']} | {row['stopped']} | {row['hit_token_cap']} |"
            )
    errors = [s for s in results.samples if s.status != "success"]
    if errors:
        lines += [
            "",
            "Unscored samples: "
            + "; ".join(f"{md_cell(s.probe_id)}#{s.sample}: {md_cell(s.error, 120)}" for s in errors),
        ]
    return "\n".join(lines) + "\n"


def compare_probes(paths: Sequence[Path], out_md: Path, labels: Sequence[str] | None = None) -> Path:
    """Side-by-side Markdown (and ``<out>.json``) of two or more probe runs on the same probe set."""
    runs = finished_runs(paths, load_probe_results, "probe")
    note = (
        ""
        if len({r.probes.get("sha256") for r in runs}) == 1
        else "\n> Warning: the runs used different probe sets; shares are not comparable.\n"
    )
    rows, data = rate_rows(runs, paths, labels, PROBE_METRICS, first="Figure", counted="samples")
    text = (
        f"# Probes side by side\n\nProbe set `{md_cell(runs[0].probes.get('name'))}`, card "
        f"{runs[0].card.get('id')}. Cells: share [95% Wilson CI] (count/n).\n{note}\n" + "\n".join(rows) + "\n"
    )
    return write_comparison(out_md, text, data)
