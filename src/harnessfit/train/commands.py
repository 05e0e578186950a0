"""CLI commands of the train stage (thin: parse options, call the stage's public functions, print).

``train sft`` and ``train grpo`` take a recipe and then any config field as a flag (``--learning_rate 2e-4``,
``--max-steps 10``); the flags go to TRL's parser, which also prints ``--help`` from the fields' metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from harnessfit.errors import UserError
from harnessfit.train.merge import merge_adapter

__all__ = ["register"]

_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.4f}"


def _stop_if_stopped(res: Any) -> None:
    """A run the health guard stopped ends as one line with exit code 3 (a train or GRPO result)."""
    # heavy: train.run pulls torch/transformers/peft (CLI start-up)
    from harnessfit.train.run import STOPPED_EXIT_CODE

    if res.status == "stopped":
        raise UserError(
            f"training stopped by the health guard at step {res.global_step}: {res.stop_reason}; "
            f"checkpoint {res.checkpoint_dir}; continue with --resume",
            exit_code=STOPPED_EXIT_CODE,
        )


def _print_outputs(con: Any, res: Any) -> None:
    """Where the run put its adapter and report (paths are text, never markup)."""
    if res.adapter_dir:
        con.print(f"adapter: {res.adapter_dir}", markup=False)
    if res.report_path:
        con.print(f"report:  {res.report_path}", markup=False)


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app: ``train sft``, ``train grpo`` and ``export merge``."""
    train_app = typer.Typer(
        help="Fine-tune a model: LoRA/QLoRA SFT on the audited tokenized set, GRPO on the build's decision points.",
        no_args_is_help=True,
    )
    export_app = typer.Typer(help="Export trained artifacts for serving.", no_args_is_help=True)

    @train_app.command("sft", context_settings=_PASS_THROUGH)
    def sft(
        ctx: typer.Context,
        recipe: Path = typer.Argument(
            None,
            help="Recipe file (YAML or TOML); see examples/recipes/. Then any "
            "HarnessfitSFTConfig field as --field value (--help lists them).",
        ),
        out: Path = typer.Option(Path("out/train"), "--out", help="Run folder (checkpoints, adapter, report)."),
        resume: bool = typer.Option(False, "--resume", help="Continue from the newest complete checkpoint in --out."),
    ) -> None:
        """Train a LoRA adapter as RECIPE says; exits 3 when the health guard stopped the run."""
        from rich.console import Console

        # the CLI loads a stage only when its command runs: config and the trainer pull torch/transformers/trl
        from harnessfit.train.config import HarnessfitSFTConfig, parse_cli
        from harnessfit.train.sft import train_sft

        cfg = parse_cli(
            HarnessfitSFTConfig, recipe, ctx.args, summary=ctx.command.help, output_dir=str(out / "checkpoints")
        )
        res = train_sft(cfg, out, resume=resume)
        con = Console()
        _stop_if_stopped(res)
        con.print(
            f"trained {res.global_step} steps for {res.harness}: val loss {_fmt(res.initial_val_loss)} → "
            f"{_fmt(res.final_val_loss)} (best {_fmt(res.best_val_loss)} at step {res.best_step})",
            markup=False,
        )
        _print_outputs(con, res)

    @train_app.command("grpo", context_settings=_PASS_THROUGH)
    def grpo(
        ctx: typer.Context,
        recipe: Path = typer.Argument(
            None,
            help="Recipe file (YAML or TOML); see examples/recipes/grpo-*.yaml. "
            "Then any HarnessfitGRPOConfig field as --field value (--help lists them).",
        ),
        out: Path = typer.Option(
            Path("out/grpo"), "--out", help="Run folder (checkpoints, adapter, completions, grpo_report.md)."
        ),
        resume: bool = typer.Option(False, "--resume", help="Continue from the newest complete checkpoint in --out."),
    ) -> None:
        """GRPO on the decision points as RECIPE says; exits 3 when the health guard stopped the run."""
        from rich.console import Console

        # the CLI loads a stage only when its command runs: config and the trainer pull torch/transformers/trl
        from harnessfit.train.config import HarnessfitGRPOConfig, parse_cli
        from harnessfit.train.grpo import train_grpo

        cfg = parse_cli(
            HarnessfitGRPOConfig, recipe, ctx.args, summary=ctx.command.help, output_dir=str(out / "checkpoints")
        )
        res = train_grpo(cfg, out, resume=resume)
        con = Console()
        _stop_if_stopped(res)
        con.print(
            f"trained {res.global_step} GRPO steps: reward {_fmt(res.reward_first)} (first 10 percent of "
            f"steps) → {_fmt(res.reward_last)} (last 10 percent); unscorable {res.unscorable}"
        )
        for line in res.heldout_lines():
            con.print(line, markup=False)
        _print_outputs(con, res)

    @train_app.command("rl", context_settings=_PASS_THROUGH)
    def rl(
        ctx: typer.Context,
        recipe: Path | None = typer.Argument(
            None,
            help="Recipe file (YAML or TOML). Then any HarnessfitRLConfig field as --field value (--help lists them).",
        ),
        suite: Path = typer.Option(None, "--suite", help="Training task suite folder (overrides suite: in RECIPE)."),
        out: Path = typer.Option(
            Path("out/rl"), "--out", help="Run folder (metrics, episodes, state, adapter, rl_report.md)."
        ),
        resume: bool = typer.Option(False, "--resume", help="Continue after the last saved step in --out."),
    ) -> None:
        """Multi-turn RL with the real Pi as the environment: G episodes per task, TRL's GRPO loss over every
        sampled token; exits 3 when the health guard stopped the run."""
        from rich.console import Console

        # the CLI loads a stage only when its command runs: config and the trainer pull torch/transformers/trl
        from harnessfit.train.config import load_config, parse_cli
        from harnessfit.train.rl.config import HarnessfitRLConfig
        from harnessfit.train.rl.loop import train_rl

        args = list(ctx.args)
        if recipe is not None and str(recipe).startswith("-"):  # no recipe: every field from flags
            recipe, args = None, [str(recipe), *args]
        kwargs = {"output_dir": str(out / "checkpoints"), "suite": str(suite) if suite else None}
        if recipe is None and "--help" not in args and "-h" not in args:
            cfg = load_config(HarnessfitRLConfig, None, args, **kwargs)
        else:
            cfg = parse_cli(HarnessfitRLConfig, recipe, args, summary=ctx.command.help, **kwargs)
        res = train_rl(cfg, out, resume=resume)
        if res.status == "stopped":
            Console(stderr=True).print(f"stopped by the health guard: {res.stop_reason}", markup=False)
            raise typer.Exit(3)
        Console().print(
            f"trained {res.steps} RL steps ({res.ended}); report: {res.report}; adapter: {res.adapter_dir}",
            markup=False,
        )

    @export_app.command("merge")
    def merge(
        adapter: Path = typer.Argument(
            ..., help="Adapter folder written by `harnessfit train sft|grpo` (OUT/adapter)."
        ),
        out: Path = typer.Option(..., "--out", help="Folder for the merged model."),
        dtype: str = typer.Option("auto", "--dtype", help="auto (keep base dtype), bf16 or fp32."),
    ) -> None:
        """Merge an adapter into its pinned base model (tokenizer with the training template + generation_config)."""
        typer.echo(f"merged model: {merge_adapter(adapter, out, dtype=dtype)}")

    app.add_typer(train_app, name="train")
    app.add_typer(export_app, name="export")
