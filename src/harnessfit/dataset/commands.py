"""CLI commands of the dataset stage (thin: parse options, call the stage's public functions, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harnessfit.convert.yields import recorded_lines
from harnessfit.dataset.config import config_from_values, load_build_config
from harnessfit.errors import UserError

__all__ = ["register"]


def _summary(report, out_dir: Path) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    m = report.manifest
    c = m["counts"]
    con = Console()
    # the path on a line of its own, never wrapped or padded (a table title would break a long one), and as text
    con.print(f"dataset → {out_dir}", markup=False, highlight=False, soft_wrap=True)
    t = Table(title="dataset build")
    t.add_column("stage")
    t.add_column("count", justify="right")
    t.add_column("seconds", justify="right")
    s = report.seconds
    t.add_row("read", str(c["read"]), f"{s.get('convert', 0):.2f}")
    t.add_row("rejected at conversion", str(c["rejected_convert"]), "")
    t.add_row("changed by redaction", str(c["redacted_conversations"]), f"{s.get('redact', 0):.2f}")
    t.add_row(
        "duplicates dropped (exact / near)",
        f"{c['duplicate_exact']} / {c['duplicate_near']}",
        f"{s.get('dedup', 0):.2f}",
    )
    pre = (c.get("prefixes") or {}).get("kept")  # a rejected trajectory's exact prefix feeds SFT: never "kept 0" alone
    if pre:
        t.add_row("kept conversations (+ exact prefixes, SFT only)", f"{c['kept']} + {pre}", "")
    else:
        t.add_row("kept conversations", str(c["kept"]), "")
    for name, v in m["splits"]["per_split"].items():
        t.add_row(
            f"  {name}: groups / conversations / actions", f"{v['groups']} / {v['conversations']} / {v['sft']}", ""
        )
    t.add_row("root requests in two splits", str(m["splits"]["group_overlap"]), f"{s.get('split', 0):.2f}")
    t.add_row("export", f"{len(m['outputs'])} files", f"{s.get('export', 0):.2f}")
    con.print(t)
    total = (m.get("yield") or {}).get("total") or {}
    for line in recorded_lines(m.get("yield") or {}, m["harness_card"]["id"]):
        con.print(line, markup=False, highlight=False, soft_wrap=True)
    if "calls" in total:
        train = m["splits"]["per_split"].get("train") or {}
        tiers = total.get("labels_by_fidelity")
        per_tier = f", fidelity byte {tiers['byte']} / content {tiers['content']}" if tiers else ""
        train_tiers = (
            f"; fidelity byte {train.get('sft_byte', 0)} / content {train.get('sft_content', 0)}"
            if "sft_content" in train
            else ""
        )
        con.print(
            f"tool calls → labels: {total['calls']} → {total['labels']}{per_tier} (yield.md says why each was "
            f"lost); actions to learn in the train split: {train.get('sft', 0)} "
            f"({train.get('prefix_sft', 0)} from exact prefixes{train_tiers})",
            markup=False,
            highlight=False,
        )
    for k in m["redaction"].get("kept") or []:
        if k["holds"]:
            con.print(
                escape(f"note: kept verbatim, as the card says: {k['text']} (it holds {', '.join(k['holds'])})"),
                style="yellow",
            )
    fp = m["redaction"]["false_positive"]
    if fp:
        rc = m["redaction"].get("planted_recall") or {}
        recall = (
            f"; planted secrets of the kinds the rules were written for removed {rc['caught']}/{rc['planted']}"
            " (a held-apart set: bench/redaction_recall.py)"
            if rc
            else ""
        )
        con.print(
            escape(
                f"redaction: {dict(m['redaction']['found'])}; false-positive rate on ordinary code "
                f"{fp['rate'] * 100:.2f}% of {fp['probes']} probe lines{recall}"
            )
        )


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""

    @app.command()
    def build(
        config: Annotated[Path | None, typer.Argument(help="TOML or YAML build config")] = None,
        inputs: Annotated[
            list[Path] | None, typer.Option("--inputs", "-i", help="trace file or folder (repeatable)")
        ] = None,
        out: Annotated[Path | None, typer.Option("--out", "-o", help="output folder")] = None,
        workers: Annotated[int | None, typer.Option(help="worker processes (output bytes never depend on it)")] = None,
        seed: Annotated[int | None, typer.Option(help="split seed")] = None,
        harness: Annotated[
            str | None,
            typer.Option(
                help="target harness as pi@VERSION or pi@VERSION+tools (a committed card; default: the config's, else "
                "the newest)"
            ),
        ] = None,
        no_redact: Annotated[bool, typer.Option("--no-redact", help="skip redaction")] = False,
        no_parquet: Annotated[bool, typer.Option("--no-parquet", help="skip the Parquet copies")] = False,
        install_dir: Annotated[
            str | None,
            typer.Option(
                help="harness folder the system prompt names (default: where `harnessfit harness install` puts it "
                "here); fix it for machine-independent data"
            ),
        ] = None,
    ) -> None:
        """Build a training set: read → convert → redact → dedup → grouped split → export (+ ledger, card, manifest)."""
        # the CLI loads a stage only when its command runs: the build pulls datasketch/scipy (~0.5 s of start-up)
        from harnessfit.dataset.build import build_dataset

        if config is None and not inputs:
            raise UserError("give a build config (harnessfit build CONFIG) or --inputs PATH [--out DIR]")
        if config is not None:
            cfg, base = load_build_config(config, workers=workers)
            if inputs:
                cfg = cfg.model_copy(update={"inputs": config_from_values(inputs=[str(p) for p in inputs]).inputs})
                base = Path.cwd()
        else:
            cfg = config_from_values(inputs=[str(p) for p in inputs or []], workers=workers)
            base = Path.cwd()
        if harness is not None:
            cfg = config_from_values(**{**cfg.model_dump(), "harness": harness, "harness_profile": None})
        if seed is not None:
            cfg = cfg.model_copy(update={"split": cfg.split.model_copy(update={"seed": seed})})
        if no_redact:
            cfg = cfg.model_copy(update={"redaction": cfg.redaction.model_copy(update={"enabled": False})})
        if no_parquet:
            cfg = cfg.model_copy(update={"parquet": False})
        if install_dir is not None:
            cfg = cfg.model_copy(update={"install_dir": install_dir})
        out_dir = (Path(out) if out else base / cfg.out).resolve()
        report = build_dataset(cfg, base, out=out_dir, progress=True)
        _summary(report, out_dir)

    @app.command()
    def verify(
        folder: Annotated[Path, typer.Argument(help="dataset folder (holds manifest.json)")],
        workers: Annotated[int, typer.Option(help="worker processes for the rebuild")] = 1,
    ) -> None:
        """Rebuild a dataset in memory from its manifest and compare byte for byte; exit 1 on any difference."""
        # the CLI loads a stage only when its command runs: the rebuild pulls datasketch/scipy (~0.5 s of start-up)
        from harnessfit.dataset.verify import verify_dataset

        result = verify_dataset(folder, workers=workers, progress=True)
        typer.echo(result.message())
        if not result.ok:
            raise typer.Exit(1)
