"""Failure-targeted synthesis: read an eval run's failures and weight the training families toward them.

Each failure an episode shows is answered by the families whose golden sessions demonstrate what was missing
(``ANSWERS``: the failure, the families, and why). A family's weight is 1 plus, for every failure, the number of
episodes that showed it spread over the families that answer it; ``choose_tasks`` then takes instances from a
generated training suite in proportion to the weights. Some failures also ask for a session variant (``VARIANTS``:
an edit Pi could not apply asks for the retry sessions, ``synth(retry=True)``; a failed call sent again with no
change between asks for the second-try sessions, ``synth(second_try=True)``). The returned ``Targeting`` is
written into the synthesis manifest, so the report can say which failures drove which data.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harnessfit.errors import UserError
from harnessfit.eval.episode import Episode
from harnessfit.eval.results import load_results
from harnessfit.eval.task import suite_families

__all__ = ["ANSWERS", "VARIANTS", "Targeting", "failures_of", "target_from_eval", "choose_tasks"]

_FINISH = ("create_module", "cli_script", "answer_from_files", "edit_constant", "config_json", "edit_string")
_EDITS = (
    "edit_constant",
    "edit_string",
    "config_json",
    "edit_list_item",
    "rename_across_files",
    "add_parameter",
    "multi_file_refactor",
    "js_edit",
)
_RECOVER = ("fix_off_by_one", "fix_failing_test", "fix_return_value", "fix_name_error", "recover_missing_file")
# the families whose golden plans carry a decoy (the second-try sessions)
_SECOND_TRY = (
    "fix_off_by_one",
    "fix_failing_test",
    "fix_return_value",
    "fix_name_error",
    "create_module",
    "cli_script",
)

# failure -> (families whose sessions show the missing behaviour, why)
ANSWERS: dict[str, tuple[tuple[str, ...], str]] = {
    "turn_cap": (_FINISH, "short loops that answer right after a clean validation"),
    "no_final_response": (_FINISH, "every session ends with a final answer after the validation passes"),
    "runaway": (("create_module", "cli_script", "answer_from_files"), "create-file runs that end promptly"),
    "invalid_tool_calls": (
        _EDITS,
        "edit calls with Pi's exact argument schema (contrast sessions add the double-encoded refusal)",
    ),
    "double_encoded_arguments": (_EDITS, "object-valued arguments; the contrast sessions show Pi refusing a string"),
    "no_validation": (_RECOVER, "sessions that run the validation command first and again after the fix"),
    "expected_change_missing": (_EDITS, "exact edits of the named text"),
    "checker_failed": (_RECOVER, "a failing check read, then exactly that repaired"),
    "failed_edit": (
        (*_EDITS, "fix_off_by_one", "fix_failing_test", "fix_return_value", "fix_name_error"),
        "retry sessions: an edit Pi could not apply (context only), the file read again, then the exact edit",
    ),
    "repeated_failed_call": (
        _SECOND_TRY,
        "second-try sessions: a wrong first change (context only), the check failing, the file read again, then "
        "the wrong lines repaired",
    ),
}

# failure -> the synth variant whose sessions show the missing behaviour
VARIANTS: dict[str, str] = {"failed_edit": "retry", "repeated_failed_call": "second-try"}


@dataclass
class Targeting:
    """What an eval run showed and the family weights it gives; stored whole in the synth manifest."""

    run: str
    episodes: int
    failures: dict[str, int]
    weights: dict[str, float]
    reasons: dict[str, str] = field(default_factory=dict)  # failure -> why its families answer it
    drove: dict[str, list[str]] = field(default_factory=dict)  # failure -> the families whose weight it raised
    chosen: dict[str, int] = field(default_factory=dict)  # family -> tasks chosen (filled by choose_tasks)
    variants: dict[str, list[str]] = field(default_factory=dict)  # synth variant -> the failures that asked for it

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def failures_of(ep: Episode) -> list[str]:
    """Every failure an episode shows (not only the first the scorer names): the targeting counts them all."""
    m = ep.metrics
    if m is None or m.complete_loop:
        return []
    found = [
        name
        for name, hit in (
            ("turn_cap", m.turn_cap_hit),
            ("runaway", m.runaway),
            ("no_final_response", not m.finished_with_response),
            ("double_encoded_arguments", m.double_encoded_arguments > 0),
            ("invalid_tool_calls", m.tool_calls_invalid > 0),
            ("no_validation", not m.validation_used),
            ("expected_change_missing", not m.expected_change),
            ("checker_failed", not m.checker_passed),
            ("failed_edit", m.pi_tool_errors.get("edit", 0) > 0),
            ("repeated_failed_call", m.repeated_failed_call),
        )
        if hit
    ]
    return found


def target_from_eval(run_dir: Path, families: list[str]) -> Targeting:
    """Weights over ``families`` (the training families a suite holds) from ``run_dir/results.json``."""
    path = Path(run_dir) / "results.json" if Path(run_dir).is_dir() else Path(run_dir)
    if not path.is_file():
        raise UserError(f"--from-eval: no results.json at {run_dir} (give an `eval agent --out` folder)")
    res = load_results(path)
    counts: Counter[str] = Counter(f for ep in res.episodes for f in failures_of(ep))
    weights = {fam: 1.0 for fam in families}
    drove: dict[str, list[str]] = {}
    for failure, n in sorted(counts.items()):
        answer = [f for f in ANSWERS.get(failure, ((), ""))[0] if f in weights]
        for fam in answer:
            weights[fam] += n / len(answer)
        drove[failure] = answer
    return Targeting(
        run=str(path),
        episodes=len(res.episodes),
        failures=dict(sorted(counts.items())),
        weights={k: round(v, 3) for k, v in sorted(weights.items())},
        reasons={k: ANSWERS[k][1] for k in sorted(counts) if k in ANSWERS},
        drove=drove,
        variants={
            v: sorted(f for f in counts if VARIANTS.get(f) == v)
            for v in sorted({VARIANTS[f] for f in counts if f in VARIANTS})
        },
    )


def choose_tasks(suite_dir: Path, targeting: Targeting, limit: int) -> list[str]:
    """Up to ``limit`` task ids of a generated training suite, per family in proportion to the weights (largest
    remainder; a family never gets more than it has), instances in suite order."""
    by_family: dict[str, list[str]] = {}
    for task_id, (fam, split) in sorted(suite_families(suite_dir).items()):
        if split == "train":
            by_family.setdefault(fam, []).append(task_id)
    if not by_family:
        raise UserError(
            f"--from-eval needs a generated suite (`harnessfit tasks generate`); {suite_dir} has no "
            "tasks.json with training families"
        )
    total = sum(targeting.weights.get(f, 1.0) for f in by_family)
    share = {f: limit * targeting.weights.get(f, 1.0) / total for f in by_family}
    take = {f: min(int(share[f]), len(ids)) for f, ids in by_family.items()}
    for fam in sorted(by_family, key=lambda f: share[f] - int(share[f]), reverse=True):
        if sum(take.values()) >= limit:
            break
        if take[fam] < len(by_family[fam]):
            take[fam] += 1
    targeting.chosen = {f: n for f, n in sorted(take.items())}
    return [t for f, ids in sorted(by_family.items()) for t in ids[: take[f]]]
