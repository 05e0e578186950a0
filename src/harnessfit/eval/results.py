"""Versioned eval results: every episode (facts + metrics) and the aggregates, as JSON and Markdown.

Like inspect_ai's EvalLog, a results file carries a ``version`` and a ``status`` (``started`` while running,
``success`` or ``error`` at the end) that consumers check before trusting the numbers. Unscored episodes
(runner/harness errors) are listed but kept out of every rate.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from harnessfit.eval.episode import FAILURES, INTEGRITY_FLAGS, UNSCORING_FLAGS, Episode
from harnessfit.eval.files import ResultsHeader
from harnessfit.eval.scorers import BUILTIN_METRICS
from harnessfit.eval.scoring import SCORERS
from harnessfit.eval.stats import mean_over_tasks, pass_at_k, pass_hat_k, rate
from harnessfit.harness.base import DEFAULT_HARNESS, harness_class

__all__ = [
    "RESULTS_VERSION",
    "RATE_METRICS",
    "rate_metrics",
    "EvalResults",
    "aggregate",
    "load_results",
    "harness_title",
    "harness_label",
    "write_results",
    "render_markdown",
]

RESULTS_VERSION = 1


def rate_metrics() -> tuple[tuple[str, str, bool], ...]:
    """(label, metric, True-is-good) of every metric registered as a rate (eval/scoring.py), in registration order."""
    return tuple((s.label or s.name, s.name, s.good) for s in SCORERS.values() if s.aggregate == "rate")


# The built-in boolean metrics reported as rates (label, field, True-is-good): what the report's tables show.
RATE_METRICS: tuple[tuple[str, str, bool], ...] = tuple(m for m in rate_metrics() if m[1] in BUILTIN_METRICS)


class EvalResults(ResultsHeader):
    """One eval run of one model on one suite."""

    what: ClassVar[str] = "eval results file"
    kind: str | None = Field(default=None, exclude=True)  # these files predate the header's kind: they name none
    version: int = RESULTS_VERSION
    model: dict[str, str]
    suite: dict[str, Any]
    config: dict[str, Any]
    sandbox: str
    pi_version: str  # the version of the harness that ran (the field keeps the name results files have)
    harness: str | None = None  # name@VERSION; a trained model's own harness agrees with it (eval refuses otherwise)
    episodes: list[Episode] = Field(default_factory=list)
    aggregates: dict[str, Any] = Field(default_factory=dict)

    def markdown(self) -> str:
        return render_markdown(self)


def aggregate(episodes: list[Episode], seeds: int) -> dict[str, Any]:
    """Rates with 95% Wilson intervals, tool-call totals, failures by name, pass@k / pass^k over seeds."""
    measured = [e for e in episodes if e.facts.status == "success" and e.metrics is not None]
    scored = [e for e in measured if e.metrics.integrity_flag not in UNSCORING_FLAGS]
    n = len(scored)
    out: dict[str, Any] = {"episodes": len(episodes), "scored": n, "unscored": len(episodes) - n}
    # why the unscored ones are out of the rates: runner/harness errors, environments this machine cannot provide,
    # a session file that disagrees with Pi's event stream (integrity)
    kept = {id(e) for e in scored}

    def why_out(e: Episode) -> str:
        if e.facts.status != "success":
            return e.facts.status
        return "integrity" if e.metrics is not None else "error"

    why = Counter(why_out(e) for e in episodes if id(e) not in kept)
    out["unscored_by_status"] = dict(sorted(why.items()))
    values = {name: _values(scored, name) for name in SCORERS}
    out["rates"] = {
        name: rate(sum(1 for v in values[name] if v), len(values[name])).as_dict() for _, name, _ in rate_metrics()
    }
    calls = sum(e.metrics.tool_calls_total for e in scored)
    valid = sum(e.metrics.tool_calls_valid for e in scored)
    out["tool_calls"] = {
        "total": calls,
        "valid": valid,
        "invalid": calls - valid,
        "valid_rate": rate(valid, calls).as_dict(),
        "invalid_by_reason": dict(
            sorted(sum((Counter(e.metrics.invalid_by_reason) for e in scored), Counter()).items())
        ),
        "double_encoded_arguments": sum(e.metrics.double_encoded_arguments for e in scored),
    }
    failures = Counter(e.metrics.failure for e in scored if e.metrics.failure)
    out["failures"] = {name: failures[name] for name in FAILURES if failures[name]}
    flags = Counter(e.metrics.integrity_flag for e in measured if e.metrics.integrity_flag)
    out["integrity_flags"] = {name: flags[name] for name in INTEGRITY_FLAGS if flags[name]}

    out["means"] = {
        name: round(sum(values[name]) / len(values[name]), 3) if values[name] else None
        for name, s in SCORERS.items()
        if s.aggregate == "mean"
    }
    missing = {name: n - len(values[name]) for name in SCORERS if name not in BUILTIN_METRICS}
    if any(missing.values()):  # a registered metric that some scored episodes could not give (Score.unscored)
        out["metrics_unscored"] = {name: k for name, k in missing.items() if k}
    per_task: dict[str, list[bool]] = defaultdict(list)
    for e in scored:
        per_task[e.facts.task_id].append(e.metrics.complete_loop)
    pairs = [(len(v), sum(v)) for _, v in sorted(per_task.items())]

    def clean(x: float) -> float | None:
        return None if math.isnan(x) else round(x, 6)

    out["pass_at_k"] = {str(k): clean(mean_over_tasks(pairs, k, pass_at_k)) for k in range(1, seeds + 1)}
    out["pass_hat_k"] = {str(k): clean(mean_over_tasks(pairs, k, pass_hat_k)) for k in range(1, seeds + 1)}
    out["per_task"] = {t: {"n": len(v), "complete_loop": sum(v)} for t, v in sorted(per_task.items())}
    return out


def _values(scored: list[Episode], name: str) -> list[Any]:
    """The values of metric ``name`` over the scored episodes: a built-in field, else every ``scores`` entry that
    has a value."""
    if name in BUILTIN_METRICS:
        return [getattr(e.metrics, name) for e in scored]
    got = [e.metrics.scores.get(name) for e in scored]
    return [g.value for g in got if g is not None and g.unscored is None]


def write_results(results: EvalResults, out_dir: Path) -> Path:
    """Write ``results.json`` (and ``results.md`` once finished); returns the JSON path."""
    return results.write(out_dir)


def load_results(path: Path) -> EvalResults:
    """Read a results file (a folder holding results.json also works); clear errors for wrong files."""
    return EvalResults.load(path)


def fmt_rate(r: dict[str, Any]) -> str:
    if r.get("rate") is None:
        return "n/a (0 scored)"
    return f"{100 * r['rate']:.0f}% [{100 * r['ci95_low']:.0f}–{100 * r['ci95_high']:.0f}] ({r['successes']}/{r['n']})"


def harness_title(results: EvalResults) -> str:
    """How text names the harness the run used (``Pi``; results without ``harness`` predate other harnesses)."""
    name = (results.harness or DEFAULT_HARNESS).partition("@")[0]
    cls = harness_class(name)
    return cls.title if cls is not None else name  # results of a harness not registered here


def harness_label(results: EvalResults) -> str:
    """``Pi 1.6.0``: the harness and the version that ran."""
    return f"{harness_title(results)} {results.pi_version}"


def _sampling(config: dict[str, Any]) -> str:
    """How the served model sampled, where the eval started it (``config.temperature``; older runs lack it)."""
    temp = config.get("temperature")
    if temp is None:
        return ""
    return " (greedy)" if temp == 0 else f" (sampled at temperature {temp:g})"


def render_markdown(results: EvalResults) -> str:
    agg = results.aggregates
    lines = [
        f"# Eval: {results.model.get('name', '?')} on {results.suite.get('name', '?')}",
        "",
        f"- status: **{results.status}**" + (f" — {results.error}" if results.error else ""),
        f"- sandbox: {results.sandbox}" + _policy_line(results),
        f"- {harness_label(results)}; seeds {results.config.get('seeds')}{_sampling(results.config)}; "
        f"episodes {agg.get('episodes', 0)} (scored {agg.get('scored', 0)}, unscored {agg.get('unscored', 0)})",
        "",
        "| Metric | Rate [95% CI] |",
        "|---|---|",
    ]
    for label, field, _ in rate_metrics():
        if field in agg.get("rates", {}):
            lines.append(f"| {label} | {fmt_rate(agg['rates'][field])} |")
    for name, s in SCORERS.items():  # a mean has a row when its metric has a label (no built-in one has)
        if s.aggregate == "mean" and s.label and name in agg.get("means", {}):
            mean = agg["means"][name]
            lines.append(f"| {_cell(s.label)} | {'n/a (0 scored)' if mean is None else f'{mean:g} (mean)'} |")
    tc = agg.get("tool_calls", {})
    if tc:
        lines.append(f"| Valid tool calls | {fmt_rate(tc['valid_rate'])} |")
        lines.append(f"| Double-encoded arguments (calls) | {tc['double_encoded_arguments']} |")
    for k, v in agg.get("pass_at_k", {}).items():
        lines.append(f"| pass@{k} | {'n/a' if v is None else f'{100 * v:.0f}%'} |")
    for k, v in agg.get("pass_hat_k", {}).items():
        lines.append(f"| pass^{k} | {'n/a' if v is None else f'{100 * v:.0f}%'} |")
    lines += [
        "",
        "| Task | Seed | Result | Failure | Turns | Tool calls (invalid) | Stop reason | Wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in results.episodes:
        f, m = e.facts, e.metrics
        if m is None:
            lines.append(f"| {f.task_id} | {f.seed} | unscored ({f.status}) | {_cell(f.error or '')} | | | | |")
            continue
        lines.append(
            f"| {f.task_id} | {f.seed} | {'pass' if m.complete_loop else 'fail'} | {m.failure or ''} | {m.turns} | "
            f"{m.tool_calls_total} ({m.tool_calls_invalid}) | {m.stop_reason or ''} | {m.wall_seconds:.1f} |"
        )
    if tc.get("invalid_by_reason"):
        lines += [
            "",
            "Invalid tool calls by reason: " + ", ".join(f"`{k}` {v}" for k, v in tc["invalid_by_reason"].items()),
        ]
    if agg.get("failures"):
        lines += ["", "Failures: " + ", ".join(f"`{k}` {v}" for k, v in agg["failures"].items())]
    flagged = [e for e in results.episodes if e.metrics is not None and e.metrics.integrity_flag]
    if flagged:
        lines += [
            "",
            "**Checker and expected change disagree** (look at these episodes; the verdicts above are unchanged):",
            "",
        ]
        lines += [f"- {e.facts.task_id} seed {e.facts.seed}: `{e.metrics.integrity_flag}`" for e in flagged]
    if agg.get("unscored_by_status"):
        lines += [
            "",
            "Unscored, kept out of every rate: "
            + ", ".join(f"`{k}` {v}" for k, v in agg["unscored_by_status"].items()),
        ]
    return "\n".join(lines) + "\n"


def _policy_line(results: EvalResults) -> str:
    """What the agent's sandbox allowed, from the first episode that recorded it (each episode has its own)."""
    policy = next(
        (
            e.facts.sandbox_policy["agent"]
            for e in results.episodes
            if e.facts.sandbox_policy and "agent" in e.facts.sandbox_policy
        ),
        None,
    )
    if policy is None:
        return ""
    if "backend" in policy:  # the container backend (eval/backends/container.py)
        return (
            f" — Harbor tasks ran in {policy['backend']} containers of their image; network {policy['network']} "
            "(per episode: `sandbox_policy`)"
        )
    return (
        f" — namespaces {', '.join(policy['unshared'])} unshared; writable only the workspace and "
        f"{harness_title(results)}'s session folder, HOME and /tmp on tmpfs; network {policy['network']} "
        "(per episode: `sandbox_policy`)"
    )


def _cell(text: str) -> str:
    """Text made safe for one Markdown table cell (no pipes, no line breaks, no markup)."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")[:300]
