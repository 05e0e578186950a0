"""Pairwise-judging results: every pair with both verdicts, every rubric score, and the counts.

A pair's *outcome* is ``a``, ``b`` or ``tie`` when both orders gave the same verdict (stable); ``order_sensitive``
when the verdict changed with the order (excluded from wins and ties, counted); ``unparseable`` when either verdict
could not be read (excluded, counted, never a loss); ``judge_error`` when the judge did not answer. The flip rate —
order-sensitive pairs among pairs with both verdicts read — is the judge's health figure: a judge that picks a
position rather than a response flips on every pair where the answers differ. Rates carry 95% Wilson intervals,
rubric means a 95% t interval.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from harnessfit.eval.files import ResultsHeader, md_cell
from harnessfit.eval.results import fmt_rate
from harnessfit.eval.stats import mean_interval, rate

__all__ = [
    "PAIRWISE_RESULTS_VERSION",
    "OUTCOMES",
    "JudgeCall",
    "Pair",
    "RubricScore",
    "PairwiseResults",
    "aggregate_pairwise",
    "write_pairwise_results",
    "load_pairwise_results",
]

PAIRWISE_RESULTS_VERSION = 1
OUTCOMES = ("a", "b", "tie", "order_sensitive", "unparseable", "judge_error")


class JudgeCall(BaseModel):
    """One verdict: ``order`` ``ab`` shows A as Response 1, ``ba`` shows B first; ``winner`` is in A/B terms."""

    order: Literal["ab", "ba"]
    raw: str | None = None
    verdict: Literal["1", "2", "tie"] | None = None
    winner: Literal["a", "b", "tie"] | None = None
    error: str | None = None


class Pair(BaseModel):
    prompt_id: str
    seed: int
    outcome: Literal["a", "b", "tie", "order_sensitive", "unparseable", "judge_error"]
    calls: list[JudgeCall]


class RubricScore(BaseModel):
    side: Literal["a", "b"]
    prompt_id: str
    seed: int
    score: int | None = None
    raw: str | None = None
    error: str | None = None


class PairwiseResults(ResultsHeader):
    what: ClassVar[str] = "pairwise results file"
    kind: Literal["pairwise"] = "pairwise"
    version: int = PAIRWISE_RESULTS_VERSION
    judge: dict[str, Any]
    questions: dict[str, Any]
    inputs: dict[str, Any]
    suite: dict[str, Any]
    missing: list[dict[str, Any]] = Field(default_factory=list)
    pairs: list[Pair] = Field(default_factory=list)
    rubric: list[RubricScore] = Field(default_factory=list)
    aggregates: dict[str, Any] = Field(default_factory=dict)

    def markdown(self) -> str:
        return render_pairwise_markdown(self)


def outcome_of(calls: list[JudgeCall]) -> str:
    """The pair's outcome from its two verdicts (see the module docstring)."""
    if any(c.error is not None for c in calls):
        return "judge_error"
    if any(c.winner is None for c in calls):
        return "unparseable"
    winners = {c.winner for c in calls}
    return winners.pop() if len(winners) == 1 else "order_sensitive"


def aggregate_pairwise(pairs: list[Pair], rubric: list[RubricScore], missing: int) -> dict[str, Any]:
    counts = Counter(p.outcome for p in pairs)
    stable = counts["a"] + counts["b"] + counts["tie"]
    both_read = stable + counts["order_sensitive"]
    calls = [c for p in pairs for c in p.calls if c.verdict is not None]
    first = sum(1 for c in calls if c.verdict == "1")
    second = sum(1 for c in calls if c.verdict == "2")
    out: dict[str, Any] = {
        "pairs": len(pairs),
        "missing": missing,
        "outcomes": {o: counts[o] for o in OUTCOMES},
        "stable": stable,
        "a_win_rate": rate(counts["a"], stable).as_dict(),
        "b_win_rate": rate(counts["b"], stable).as_dict(),
        "tie_rate": rate(counts["tie"], stable).as_dict(),
        "flip_rate": rate(counts["order_sensitive"], both_read).as_dict(),
        "unparseable_rate": rate(counts["unparseable"], len(pairs) - counts["judge_error"]).as_dict(),
        "first_position_rate": rate(first, first + second).as_dict(),
    }
    sides: dict[str, Any] = {}
    for side in ("a", "b"):
        mine = [r for r in rubric if r.side == side]
        scores = [r.score for r in mine if r.score is not None]
        sides[side] = {
            **mean_interval(scores, 1.0, 5.0),
            "unparseable": sum(1 for r in mine if r.score is None and r.error is None),
            "judge_error": sum(1 for r in mine if r.error is not None),
            "distribution": {str(k): scores.count(k) for k in range(1, 6)},
        }
    out["rubric"] = sides if rubric else {}
    return out


def write_pairwise_results(results: PairwiseResults, out_dir: Path) -> Path:
    return results.write(out_dir)


def load_pairwise_results(path: Path) -> PairwiseResults:
    return PairwiseResults.load(path)


def _mean(r: dict[str, Any]) -> str:
    if r.get("mean") is None:
        return "n/a (0 scored)"
    ci = "" if r.get("ci95_low") is None else f" [{r['ci95_low']:.2f}–{r['ci95_high']:.2f}]"
    return f"{r['mean']:.2f}{ci} / 5 (n {r['n']}, unparseable {r['unparseable']})"


def render_pairwise_markdown(results: PairwiseResults) -> str:
    agg, ins = results.aggregates, results.inputs
    a, b = md_cell(ins["a"]["model"]), md_cell(ins["b"]["model"])
    oc = agg.get("outcomes", {})
    lines = [
        f"# Blinded pairwise review: A = {a}, B = {b}",
        "",
        f"- status: **{results.status}**" + (f" — {md_cell(results.error, 400)}" if results.error else ""),
        f"- suite {md_cell(results.suite.get('name'))}; judge {md_cell(results.judge.get('model_id'))} at "
        f"{md_cell(results.judge.get('base_url'))}; questions v{results.questions.get('pairwise_version')} "
        f"(rubric v{results.questions.get('rubric_version')})",
        f"- pairs {agg.get('pairs', 0)}, each judged twice with the order reversed; missing an answer on one side: "
        f"{agg.get('missing', 0)}",
        "",
        "| Outcome | Count | Share [95% CI] |",
        "|---|---|---|",
        f"| A wins (stable) | {oc.get('a', 0)} | {fmt_rate(agg['a_win_rate'])} of stable |" if agg else "",
        f"| B wins (stable) | {oc.get('b', 0)} | {fmt_rate(agg['b_win_rate'])} of stable |" if agg else "",
        f"| Ties (stable) | {oc.get('tie', 0)} | {fmt_rate(agg['tie_rate'])} of stable |" if agg else "",
        f"| Order-sensitive (excluded) | {oc.get('order_sensitive', 0)} | flip rate {fmt_rate(agg['flip_rate'])} |"
        if agg
        else "",
        f"| Unparseable (excluded, never a loss) | {oc.get('unparseable', 0)} | {fmt_rate(agg['unparseable_rate'])} |"
        if agg
        else "",
        f"| Judge errors (excluded) | {oc.get('judge_error', 0)} | |" if agg else "",
        "",
        f"Position bias: the judge chose Response 1 in {fmt_rate(agg['first_position_rate'])} of its decided "
        "verdicts (an unbiased judge sits near 50% once the orders are balanced)."
        if agg
        else "",
    ]
    if agg.get("rubric"):
        lines += [
            "",
            "| Standalone rubric | Mean [95% CI] |",
            "|---|---|",
            f"| A ({a}) | {_mean(agg['rubric']['a'])} |",
            f"| B ({b}) | {_mean(agg['rubric']['b'])} |",
        ]
    lines += ["", "| Prompt | Seed | Outcome | A first (ab) | B first (ba) |", "|---|---|---|---|---|"]
    for p in results.pairs:
        cells = [c.winner or ("error" if c.error else "unparseable") for c in p.calls]
        lines.append(f"| {md_cell(p.prompt_id)} | {p.seed} | {p.outcome} | {cells[0]} | {cells[1]} |")
    return "\n".join(line for line in lines if line is not None) + "\n"
