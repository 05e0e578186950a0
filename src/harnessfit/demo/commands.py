"""`harnessfit demo`: the whole pipeline on the embedded model on CPU (the README's main job)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harnessfit.demo.pipeline import DemoPlan, run_demo

__all__ = ["register"]


def demo(
    out: Annotated[Path, typer.Option(help="Output folder (one sub-folder per stage, report.md at the top).")] = Path(
        "out/demo"
    ),
    model: Annotated[
        str, typer.Option(help="Base model spec (embedded alias, local folder or HF id).")
    ] = "smollm2-135m",
    traces: Annotated[
        Path | None,
        typer.Option(help="Real traces to add to the synthesised sessions (default: ../shared/traces when present)."),
    ] = None,
    no_traces: Annotated[bool, typer.Option("--no-traces", help="Train on synthesised sessions only.")] = False,
    seeds: Annotated[int, typer.Option(help="Eval runs per task.")] = 1,
    judge: Annotated[
        str | None,
        typer.Option(
            help="OpenAI-compatible judge URL (…/v1): adds a blinded pairwise review of base vs tuned on the raw suites."
        ),
    ] = None,
    raw_prompts: Annotated[
        int, typer.Option(min=0, help="The first N prompts of each raw suite (0: all of them).")
    ] = 6,
) -> None:
    """Run everything on CPU: capture Pi's card → synth + real traces → build → audit → short SFT → serve base and
    tuned → eval both in the real Pi → report.md with the before/after table."""
    plan = DemoPlan(out=out, model=model, seeds=seeds, judge=judge, raw_prompts=raw_prompts or None)
    if no_traces:
        plan.traces = None
    elif traces is not None:
        plan.traces = traces
    run_demo(plan)


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.command("demo")(demo)
