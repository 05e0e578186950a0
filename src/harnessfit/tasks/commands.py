"""CLI commands of the task families: ``tasks list`` and ``tasks generate`` (thin: options in, lines out)."""

from __future__ import annotations

from pathlib import Path

import typer

from harnessfit.errors import UserError
from harnessfit.tasks.family import families_in, get_family
from harnessfit.tasks.generate import generate_tasks, per_kind_counts
from harnessfit.tasks.harbor_import import import_harbor

__all__ = ["register"]

tasks_app = typer.Typer(
    help="Task families: generate distinct, checkable tasks (training and held-out families).", no_args_is_help=True
)


@tasks_app.command("list")
def list_cmd() -> None:
    """One family per line: name, split (train / heldout), kind, what it asks."""
    for fam in families_in():
        typer.echo(f"{fam.name}\t{fam.split}\t{fam.kind.value}\t{fam.summary}")


@tasks_app.command("generate")
def generate_cmd(
    families: list[str] = typer.Argument(None, metavar="FAMILY...", help="Families to generate (see `tasks list`)."),
    all_: bool = typer.Option(False, "--all", help="Every family of --split."),
    split: str = typer.Option(
        None, "--split", help="With --all: only the train or the heldout families (default: both)."
    ),
    n: int = typer.Option(10, "--n", help="Distinct instances per family."),
    per_kind: int = typer.Option(
        None,
        "--per-kind",
        help="Instead of --n: this many instances per kind (edit, "
        "recover, create), spread evenly over the kind's families.",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed: the same seed writes the same folders."),
    out: Path = typer.Option(..., "--out", help="Suite folder to write (one task folder per instance + tasks.json)."),
    check: bool = typer.Option(
        True,
        "--check/--no-check",
        help="Play each task's golden plan on the host and "
        "require its checker to pass (and to fail on the untouched workspace).",
    ),
    force: bool = typer.Option(False, "--force", help="Replace a non-empty --out."),
) -> None:
    """Write N instances of each family as task folders (a suite `eval agent --suite` and `synth` take)."""
    if split not in (None, "train", "heldout"):
        raise UserError(f"--split must be train or heldout (got {split!r})")
    if all_ == bool(families):
        raise UserError("name the families to generate, or pass --all (not both)")
    chosen = families_in(split) if all_ else [get_family(name) for name in families]  # type: ignore[arg-type]
    counts = per_kind_counts(chosen, per_kind) if per_kind else n
    manifest = generate_tasks(
        chosen, out, n=counts, seed=seed, check=check, force=force, progress=lambda line: typer.echo(line)
    )
    held = sum(1 for r in manifest["tasks"] if r["split"] == "heldout")
    typer.echo(
        f"wrote {len(manifest['tasks'])} tasks ({held} from held-out families) to {out}"
        f"{'; every golden plan checked' if check else ''}"
    )


@tasks_app.command("import")
def import_cmd(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="The source format: harbor."),
    source: Path = typer.Argument(..., metavar="DIR", help="A Harbor task folder, or a folder of them."),
    out: Path = typer.Option(..., "--out", help="Suite folder to write (one task folder per converted task)."),
    force: bool = typer.Option(False, "--force", help="Replace a non-empty --out."),
) -> None:
    """Convert Harbor tasks into task folders (checked in the sandbox); the rest listed with the reason."""
    if fmt != "harbor":
        raise UserError(f"unknown task format {fmt!r} (harbor)")
    written, skipped = import_harbor(source, out, force=force)
    for task_id in written:
        typer.echo(f"converted\t{task_id}")
    for task_id, reason in skipped:
        typer.echo(f"skipped\t{task_id}\t{reason}")
    typer.echo(f"wrote {len(written)} of {len(written) + len(skipped)} Harbor tasks to {out}")


def register(app: typer.Typer) -> None:
    app.add_typer(tasks_app, name="tasks")
