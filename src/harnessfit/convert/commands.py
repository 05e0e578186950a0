"""CLI commands of the convert stage (thin: parse options, call the stage's public functions, print)."""

from __future__ import annotations

from pathlib import Path

import typer

from harnessfit.convert.policy import FIDELITY_TIERS, ConvertPolicy
from harnessfit.convert.run import convert
from harnessfit.convert.yields import recorded_lines
from harnessfit.core.rejection import Reason
from harnessfit.errors import UserError
from harnessfit.harness.card import load_harness

__all__ = ["register"]


def _convert_cmd(
    inputs: list[Path] = typer.Argument(..., help="Trace files or folders (walked recursively, sorted)."),
    out: Path = typer.Option(
        ...,
        "--out",
        "-o",
        help="Output folder (conversations.jsonl, prefixes.jsonl, "
        "ledger.jsonl, ledger_summary.md, accounting.json, yield.json, yield.md).",
    ),
    workers: int = typer.Option(
        1, "--workers", "-w", min=1, help="Worker processes (output is identical for any count)."
    ),
    formats: list[str] = typer.Option(None, "--format", "-f", help="Only these formats (repeatable); default: detect."),
    harness: str = typer.Option(
        None,
        "--harness",
        help="Target harness as pi@VERSION, whose committed card defines "
        "the wire format (default: the newest committed card); pi@VERSION+tools is Pi with "
        "its optional grep/find/ls (Claude Code Grep maps to grep where exact).",
    ),
    install_dir: str = typer.Option(
        None,
        "--install-dir",
        help="Harness folder the system prompt names "
        "(default: where `harnessfit harness install` puts it on this machine).",
    ),
    keep_ui_calls: bool = typer.Option(
        False,
        "--keep-ui-calls",
        help="Never drop UI-only calls (TodoWrite, update_plan…): they then block like any tool Pi lacks.",
    ),
    fidelity: str = typer.Option(
        "content",
        "--fidelity",
        help="Lowest fidelity tier a kept context may have: "
        "content (also results rendered from output the source agent altered in a "
        "documented way, e.g. Claude Code's trimmed Bash output; named on the record) or "
        "byte (every byte known).",
    ),
) -> None:
    """Convert traces into the harness's exact wire format, with a reject ledger and accounting."""
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn
    from rich.table import Table

    if fidelity not in FIDELITY_TIERS:
        raise UserError(f"--fidelity must be one of {', '.join(FIDELITY_TIERS)} (got {fidelity!r})")
    card = load_harness(harness)
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]convert[/]"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[files]} files"),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task("convert", total=None, files=0)

        def on_units(n: int, size: int) -> None:
            progress.update(task, total=size)

        def on_unit(res) -> None:
            progress.update(task, advance=res.size, files=progress.tasks[0].fields["files"] + 1)

        summary = convert(
            inputs,
            out,
            card,
            workers=workers,
            formats=formats or None,
            on_units=on_units,
            on_unit=on_unit,
            install_dir=install_dir,
            policy=ConvertPolicy(drop_ui_tools=not keep_ui_calls, fidelity=fidelity),
        )
    acc = summary.accounting
    out_console = Console()
    # the path on a line of its own, never wrapped or padded (a table title would break a long one), and as text
    out_console.print(f"convert → {out}  (card {summary.card})", markup=False, highlight=False, soft_wrap=True)
    table = Table(title="records by format")
    for col in ("format", "files", "read", "accepted", "rejected"):
        table.add_column(col, justify="left" if col == "format" else "right")
    for fmt, d in sorted(acc.as_dict()["by_format"].items()):
        table.add_row(escape(fmt), str(d["files"]), str(d["read"]), str(d["accepted"]), str(d["rejected"]))
    table.add_row("[bold]total", str(len(acc.files)), str(acc.read), str(acc.accepted), str(acc.rejected))
    out_console.print(table)
    reasons = acc.reasons()
    if reasons:
        rt = Table(title="rejections by reason (gate order)")
        rt.add_column("reason")
        rt.add_column("count", justify="right")
        for r in Reason:
            if reasons.get(r.value):
                rt.add_row(r.value, str(reasons[r.value]))
        out_console.print(rt)
    _print_yield(out_console, summary)


def _print_yield(out_console, summary) -> None:
    """The yield table, the recording Pis' lines, calls → labels (per fidelity tier at tier content) and the
    accounting identity."""
    from rich.table import Table

    acc = summary.accounting
    ydoc = summary.yields.as_dict()
    yt = Table(title="tool calls → training labels (yield.json)")
    for col in ("format", "calls read", "kept as labels", "dropped", "lost by reason"):
        yt.add_column(col, justify="left" if col in ("format", "dropped", "lost by reason") else "right")
    for fmt, d in ydoc["by_format"].items():
        if d["calls"]:
            yt.add_row(fmt, str(d["calls"]), str(d["labels"]), _counts(d["dropped"]), _counts(d["lost"]))
    t = ydoc["total"]
    yt.add_row("[bold]total", str(t["calls"]), str(t["labels"]), _counts(t["dropped"]), _counts(t["lost"]))
    out_console.print(yt)
    tiers = t.get("labels_by_fidelity")
    per_tier = f" (fidelity byte {tiers['byte']}, content {tiers['content']})" if tiers else ""
    for line in [*recorded_lines(ydoc, summary.card), f"tool calls → labels: {t['calls']} → {t['labels']}{per_tier}"]:
        out_console.print(line, markup=False, highlight=False, soft_wrap=True)
    prefixes = (
        f"; {summary.prefixes} exact prefixes of rejected trajectories (their labels feed SFT)"
        if summary.prefixes
        else ""
    )
    out_console.print(
        f"read {acc.read} = accepted {acc.accepted} + rejected {acc.rejected}{prefixes}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def _counts(d: dict[str, int]) -> str:
    from rich.markup import escape

    return escape(", ".join(f"{k} {n}" for k, n in d.items())) or "-"


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.command("convert")(_convert_cmd)
