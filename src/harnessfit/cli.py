"""The ``harnessfit`` command: a thin shell over each stage's public functions.

Each stage registers its own commands (``<stage>/commands.py`` → ``register(app)``); this file only assembles
them and turns ``UserError`` into one clear line and a non-zero exit.
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.markup import escape

from harnessfit import __version__
from harnessfit.convert import commands as convert_cmds
from harnessfit.dataset import commands as dataset_cmds
from harnessfit.demo import commands as demo_cmds
from harnessfit.errors import UserError
from harnessfit.eval import commands as eval_cmds
from harnessfit.harness import commands as harness_cmds
from harnessfit.report import commands as report_cmds
from harnessfit.serve import commands as serve_cmds
from harnessfit.synth import commands as synth_cmds
from harnessfit.tasks import commands as tasks_cmds
from harnessfit.tokens import commands as tokens_cmds
from harnessfit.train import commands as train_cmds

__all__ = ["app", "main"]

app = typer.Typer(
    name="harnessfit",
    help="Teach small open models to work as coding agents inside one agent harness (Pi first): "
    "capture the harness, convert traces, build datasets, audit tokens, train, serve, evaluate, report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def version() -> None:
    """Print harnessfit's version."""
    typer.echo(__version__)


def _register_all() -> None:
    for mod in (
        harness_cmds,
        convert_cmds,
        dataset_cmds,
        tokens_cmds,
        train_cmds,
        serve_cmds,
        tasks_cmds,
        eval_cmds,
        synth_cmds,
        report_cmds,
        demo_cmds,
    ):
        mod.register(app)


_register_all()


def main() -> None:
    try:
        app()
    except UserError as exc:  # the message may name a path or quote a trace: printed as written, never as markup
        Console(stderr=True).print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except OSError as exc:  # an unwritable --out, a vanished input: the user's to fix, so one line
        where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
        Console(stderr=True).print(
            f"[bold red]error:[/] {escape(f'{exc.strerror or exc}{where}')}", highlight=False, soft_wrap=True
        )
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
