"""CLI commands of the tokens stage (thin: parse options, call the stage's public functions, print)."""

from __future__ import annotations

from pathlib import Path

import typer

from harnessfit.errors import UserError
from harnessfit.tokens.audit import audit

__all__ = ["register"]


def _parse_caps(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        caps = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise UserError(f"--caps takes comma-separated token counts, e.g. 4096,8192; got {text!r}") from None
    if not caps or any(c <= 0 for c in caps):
        raise UserError(f"--caps must be positive token counts; got {text!r}")
    return caps


def audit_command(
    dataset: Path = typer.Argument(..., help="A dataset folder written by `harnessfit build` (reads sft/*.jsonl)."),
    model: str = typer.Option(
        "smollm2-135m", "--model", "-m", help="Model: smollm2-135m (embedded), a local folder, or a Hugging Face id."
    ),
    out: Path = typer.Option(
        None,
        "--out",
        "-o",
        help="Output folder (default: DATASET-audit beside the dataset, so a rebuild never mixes with it).",
    ),
    caps: str = typer.Option(
        None,
        "--caps",
        help="Candidate caps, comma-separated (default 4096,8192,16384,20480,"
        "32768; the model's native context is always added).",
    ),
    cap: int = typer.Option(None, "--cap", help="Cap applied to the tokenized set (default: the recommended one)."),
    template: str = typer.Option(
        "auto", "--template", help="auto, native, chatml-tools, or a .jinja file with a tool-capable template."
    ),
    think_in_labels: bool = typer.Option(
        False, "--think-in-labels/--no-think-in-labels", help="Train on the assistant's thinking (as <think>…</think>)."
    ),
    harness: str = typer.Option(
        None,
        "--harness",
        help="Target harness as pi@VERSION; must be the one the dataset "
        "was built for (default: that one, from its manifest).",
    ),
) -> None:
    """Render SFT records with the real tokenizer and chat template: verified loss masks, token counts, a context-cap
    decision, and the tokenized training set (audit.json, audit.md, lengths.png, tokenized/, tokenizer/)."""
    from rich.console import Console
    from rich.markup import escape

    out_dir = out or dataset.resolve().parent / f"{dataset.resolve().name}-audit"
    report = audit(
        dataset,
        model,
        out_dir,
        caps=_parse_caps(caps),
        cap=cap,
        template=template,
        think_in_labels=think_in_labels,
        harness=harness,
    )
    console = Console()
    t = report.total
    console.print(
        f"audited {report.records_rendered}/{report.records_read} records for {escape(report.harness)} with "
        f"template [bold]{escape(report.template['name'])}[/]: {t.prompt_tokens:,} prompt + {t.supervised_tokens:,} "
        f"supervised tokens",
        highlight=False,
    )
    bad = {k: f.count for k, f in report.violations.items() if f.count}
    probs = {k: f.count for k, f in report.problems.items() if f.count}
    console.print(escape(f"mask violations: {bad or 'none'}; unusable records: {probs or 'none'}"), highlight=False)
    console.print(
        escape(
            f"recommended cap {report.recommended_cap} ({report.recommendation_reason}); applied "
            f"{report.cap_applied}; tokenized set: {report.tokenized} → {out_dir}"
        ),
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.command("audit")(audit_command)
