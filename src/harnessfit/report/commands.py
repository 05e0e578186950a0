"""CLI commands of the report stage: ``report`` (static HTML) and ``view`` (serve it on 127.0.0.1)."""

from __future__ import annotations

from pathlib import Path

import typer

from harnessfit.report.build import build_report, report_folders
from harnessfit.report.site import MARKER
from harnessfit.report.view import HOST, serve_folder

__all__ = ["register"]


def report_cmd(
    run_dirs: list[Path] = typer.Argument(
        ...,
        metavar="RUN_DIR...",
        help="Run folders: out/demo, or the folders "
        "your stages wrote (convert, build, audit, train, eval ... outputs, found "
        "by their own files wherever they sit).",
    ),
    out: Path = typer.Option(None, "--out", help="Report folder (default: RUN_DIR/report; needed for several)."),
    workers: int = typer.Option(2, "--workers", help="Pi session exports made in parallel."),
) -> None:
    """Write a static HTML report of a run (one section per stage, a page per eval episode); opens from disk."""
    res = report_folders(run_dirs, out, workers=workers, progress=True)
    for key, why in res.skipped.items():
        typer.echo(f"warning: section {key} left out: {why}", err=True)
    typer.echo(f"sections: {', '.join(res.sections)}; {res.pages} pages")
    typer.echo(f"wrote {res.index}  (open it in a browser, or `harnessfit view {res.index.parent}`)")


def view_cmd(
    run_dir: Path = typer.Argument(..., help="A run folder (its report is built first) or a report folder."),
    port: int = typer.Option(8000, "--port", help="Port on 127.0.0.1 (0 picks a free one)."),
) -> None:
    """Serve a run's HTML report on 127.0.0.1 until Ctrl-C (builds or refreshes RUN_DIR/report first)."""
    folder = Path(run_dir)
    if not (folder / MARKER).is_file():
        folder = build_report(folder, progress=True).index.parent
    server = serve_folder(folder, port)
    typer.echo(f"serving {folder} at http://{HOST}:{server.server_address[1]}/  (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.command("report")(report_cmd)
    app.command("view")(view_cmd)
