"""CLI commands of the train stage (thin: parse options, call the stage's public functions, print)."""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app: ``train sft`` and ``export merge``."""
    train_app = typer.Typer(help="Fine-tune a model on the audited tokenized set (LoRA/QLoRA SFT).", no_args_is_help=True)
    export_app = typer.Typer(help="Export trained artifacts for serving.", no_args_is_help=True)

    @train_app.command("sft")
    def sft(
        recipe: Path = typer.Argument(..., help="Recipe file (YAML or TOML); see examples/recipes/."),
        out: Path = typer.Option(Path("out/train"), "--out", help="Run folder (checkpoints, adapter, report)."),
        resume: bool = typer.Option(False, "--resume", help="Continue from the newest complete checkpoint in --out."),
        audit_dir: str = typer.Option(None, "--audit-dir", help="The audit folder to train on (overrides the recipe's audit_dir; `harnessfit audit DATASET` writes DATASET-audit by default)."),
        model: str = typer.Option(None, "--model", help="Override the recipe's base model."),
        max_steps: int = typer.Option(None, "--max-steps", help="Override max_steps."),
        learning_rate: float = typer.Option(None, "--lr", help="Override learning_rate."),
        seed: int = typer.Option(None, "--seed", help="Override seed."),
        harness: str = typer.Option(None, "--harness", help="Target harness as pi@VERSION; must be the one the audit "
                                    "recorded (default: that one)."),
    ) -> None:
        """Train a LoRA adapter as RECIPE says; exits 3 when the health guard stopped the run."""
        from rich.console import Console

        from harnessfit.errors import UserError
        from harnessfit.train.recipe import load_recipe
        from harnessfit.train.sft import STOPPED_EXIT_CODE, train_sft

        rec = load_recipe(recipe, audit_dir=audit_dir, model=model, max_steps=max_steps,
                          learning_rate=learning_rate, seed=seed)
        res = train_sft(rec, out, resume=resume, harness=harness)
        con = Console()
        if res.status == "stopped":
            raise UserError(f"training stopped by the health guard at step {res.global_step}: {res.stop_reason}; "
                            f"checkpoint {res.checkpoint_dir}; continue with --resume", exit_code=STOPPED_EXIT_CODE)
        fmt = lambda x: "–" if x is None else f"{x:.4f}"  # noqa: E731
        con.print(f"trained {res.global_step} steps for {res.harness}: val loss {fmt(res.initial_val_loss)} → "
                  f"{fmt(res.final_val_loss)} (best {fmt(res.best_val_loss)} at step {res.best_step})", markup=False)
        if res.adapter_dir:
            con.print(f"adapter: {res.adapter_dir}", markup=False)  # a path is text, never markup
        if res.report_path:
            con.print(f"report:  {res.report_path}", markup=False)

    @export_app.command("merge")
    def merge(
        adapter: Path = typer.Argument(..., help="Adapter folder written by `harnessfit train sft` (OUT/adapter)."),
        out: Path = typer.Option(..., "--out", help="Folder for the merged model."),
        dtype: str = typer.Option("auto", "--dtype", help="auto (keep base dtype), bf16 or fp32."),
    ) -> None:
        """Merge an adapter into its pinned base model (tokenizer with the training template + generation_config)."""
        from harnessfit.train.merge import merge_adapter

        typer.echo(f"merged model: {merge_adapter(adapter, out, dtype=dtype)}")

    app.add_typer(train_app, name="train")
    app.add_typer(export_app, name="export")
