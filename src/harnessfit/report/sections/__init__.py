"""The report's sections, one per stage, in the order they appear on ``index.html``.

A section is a function ``section(run_dir: Path) -> Section | None``: it reads only that stage's files under the
run folder and returns ``None`` when the stage is absent. Add one by writing the function (templates under
``report/templates/sections/``) and putting it in ``SECTIONS`` below; see docs/extending.md, "Add a report
section". Two factories serve stages whose files follow a shared shape: ``training_section`` (a metrics JSONL of
logged rows, curves given as ``Curve`` lists; ``GRPO_CURVES`` for reward components) and
``results_table_section`` (results JSON in ``eval/results.py``'s conventions).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harnessfit.report.sections import audit, convert, dataset, evals, funnel, grpo, harness, rl, run, synth
from harnessfit.report.sections.results import results_table_section
from harnessfit.report.sections.training import GRPO_CURVES, SFT_CURVES, training_section
from harnessfit.report.site import Section

__all__ = ["SECTIONS", "SectionFn", "training_section", "results_table_section", "SFT_CURVES", "GRPO_CURVES"]

SectionFn = Callable[[Path], "Section | None"]

SECTIONS: dict[str, SectionFn] = {
    "run": run.section,
    "funnel": funnel.section,
    "harness": harness.section,
    "synth": synth.section,
    "convert": convert.section,
    "dataset": dataset.section,
    "audit": audit.section,
    "train": training_section("train", "SFT training", curves=SFT_CURVES),
    "grpo": grpo.section,
    "rl": rl.section,
    "eval": evals.section,
    "raw": results_table_section("raw/*/*/results.json", "Raw one-shot suites (no tools)", key="raw", kind="raw"),
    "pairwise": results_table_section(
        "raw/*/pairwise/results.json", "Blinded pairwise review", key="pairwise", kind="pairwise"
    ),
    "direct": results_table_section(
        "direct/*/*/results.json", "Direct answers (no harness, the task's checker)", key="direct", kind="direct"
    ),
    "probe": results_table_section("probe/*/results.json", "Base-model probes", key="probe", kind="probe"),
}
