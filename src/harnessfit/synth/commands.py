"""CLI of the synth stage: ``harnessfit synth`` records real Pi sessions of scripted solvers on a task suite,
optionally weighted toward an eval run's failures (thin: options in, lines out)."""

from __future__ import annotations

from pathlib import Path

import typer

from harnessfit.errors import UserError
from harnessfit.eval.run import default_suite, episode_line
from harnessfit.eval.task import suite_families
from harnessfit.harness.versions import parse_harness
from harnessfit.synth import synth
from harnessfit.synth.targeting import choose_tasks, target_from_eval

__all__ = ["register"]

_HARNESS_HELP = "Pi to run, as pi@VERSION (an installed version: `harnessfit harness install pi --version V`)."


def _pi_version(harness: str | None) -> str:
    return parse_harness(harness)[1]


def synth_cmd(
    suite: Path = typer.Option(
        None,
        "--suite",
        help="Task suite folder (default: the repository's "
        "examples/tasks/default); a generated suite's held-out families are refused.",
    ),
    out: Path = typer.Option(Path("runs/synth"), "--out", help="Output folder (sessions/, manifest.json)."),
    seeds: int = typer.Option(1, "--seeds", help="Golden runs per task."),
    workers: int = typer.Option(2, "--workers", help="Episodes run in parallel."),
    contrast: bool = typer.Option(
        True, "--contrast/--no-contrast", help="Also record the double-encoded-then-recovered contrast sessions."
    ),
    retry: bool | None = typer.Option(
        None,
        "--retry/--no-retry",
        help="Also record retry sessions: a failed first edit (kept as context only), a re-read of the file, then "
        "the exact edit; on a create task, an edit of the missing file (context only), then the write. "
        "Default: off, or with --from-eval on when the run shows an edit Pi could not apply.",
        show_default=False,
    ),
    second_try: bool | None = typer.Option(
        None,
        "--second-try/--no-second-try",
        help="Also record second-try sessions on tasks whose golden plan has a decoy: a wrong first change that Pi "
        "applies (kept as context only), the validation failing, a re-read of the file, then the repair of the "
        "wrong lines. Default: off, or with --from-eval on when the run shows a failed call sent again unchanged.",
        show_default=False,
    ),
    harness: str = typer.Option(None, "--harness", help=_HARNESS_HELP + " Default: the newest committed card."),
    task: list[str] = typer.Option(None, "--task", help="Only these task ids (repeatable)."),
    resume: bool = typer.Option(False, "--resume", help="Continue a killed run in --out: only missing episodes run."),
    from_eval: Path = typer.Option(
        None,
        "--from-eval",
        help="An eval run folder: weight the generated suite's "
        "training families toward the failures it shows (needs --limit).",
    ),
    limit: int = typer.Option(None, "--limit", help="With --from-eval: how many tasks to record."),
) -> None:
    """Record real Pi session files of the golden solver (and contrast examples) for `harnessfit build`."""
    suite = suite or default_suite()
    notes = None
    if from_eval is not None:
        if not limit or limit < 1 or task:
            raise UserError("--from-eval needs --limit N (how many tasks to record) and no --task")
        families = sorted({fam for fam, split in suite_families(suite).values() if split == "train"})
        targeting = target_from_eval(from_eval, families)
        task = choose_tasks(suite, targeting, limit)
        notes = {"targeting": targeting.as_dict()}
        for failure, n in targeting.failures.items():
            typer.echo(f"{failure}: {n} episode(s) → {', '.join(targeting.drove.get(failure, [])) or '(none)'}")
        typer.echo("tasks per family: " + ", ".join(f"{f} {n}" for f, n in targeting.chosen.items()))
        if retry is None and "retry" in targeting.variants:
            retry = True
            typer.echo(f"retry sessions: on ({', '.join(targeting.variants['retry'])})")
        if second_try is None and "second-try" in targeting.variants:
            second_try = True
            typer.echo(f"second-try sessions: on ({', '.join(targeting.variants['second-try'])})")
    manifest = synth(
        suite,
        out,
        seeds=seeds,
        workers=workers,
        contrast=contrast,
        retry=bool(retry),
        second_try=bool(second_try),
        pi_version=_pi_version(harness),
        task_ids=task or None,
        resume=resume,
        notes=notes,
        on_episode=lambda ep: typer.echo(episode_line(ep, "synth"), err=True),
    )
    typer.echo(
        f"Pi {manifest['pi_version']}: wrote {len(manifest['files'])} session files under {out / 'sessions'} "
        f"({len(manifest['skipped'])} skipped); manifest {out / 'manifest.json'}"
    )


def register(app: typer.Typer) -> None:
    """Add ``harnessfit synth`` to the main app."""
    app.command("synth")(synth_cmd)
