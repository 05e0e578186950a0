"""CLI commands of raw suites (thin: parse options, call ``run_raw`` / ``install_toolchains``, print)."""

from __future__ import annotations

from pathlib import Path

import typer

from harnessfit.errors import UserError
from harnessfit.eval.raw import install_toolchains, run_raw

__all__ = ["register"]

_DEFAULT_SUITE = Path("examples/raw/svelte-components")


def raw(
    model: str = typer.Option(None, "--model", help="Model spec to serve (embedded alias, local folder, HF id)."),
    endpoint: str = typer.Option(
        None,
        "--endpoint",
        help="Running OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (instead of --model).",
    ),
    model_id: str = typer.Option(None, "--model-id", help="Model id at --endpoint (default: the first it lists)."),
    api_key_env: str = typer.Option(
        None,
        "--api-key-env",
        help="Environment variable holding the endpoint's API key (sent as a bearer token; never written anywhere).",
    ),
    suite: Path = typer.Option(_DEFAULT_SUITE, "--suite", help="Raw suite folder (suite.yaml)."),
    seeds: int = typer.Option(1, "--seeds", help="Completions per prompt."),
    temperature: float = typer.Option(
        None, "--temperature", help="Sampling temperature (default: 0 for one seed, 0.7 for several)."
    ),
    max_tokens: int = typer.Option(512, "--max-tokens", help="Output cap per completion."),
    workers: int = typer.Option(1, "--workers", help="Completions requested in parallel."),
    prompt: list[str] = typer.Option(None, "--prompt", help="Only these prompt ids (repeatable)."),
    adapter: Path = typer.Option(None, "--adapter", help="LoRA adapter folder for --model (served by harnessfit)."),
    out: Path = typer.Option(Path("runs/raw"), "--out", help="Output folder (results.json, results.md)."),
) -> None:
    """Answer a raw suite's frozen prompts without tools; check the code with the language's real toolchain."""
    if (model is None) == (endpoint is None):
        raise UserError("give exactly one of --model SPEC or --endpoint URL")
    extra = {"adapter": adapter} if adapter is not None else {}
    res = run_raw(
        model or endpoint,
        suite,
        out,
        seeds=seeds,
        temperature=temperature,
        max_tokens=max_tokens,
        workers=workers,
        model_id=model_id,
        api_key_env=api_key_env,
        prompt_ids=prompt or None,
        **extra,
    )
    rates, agg = res.aggregates["rates"], res.aggregates
    cells = ", ".join(f"{k.replace('_', ' ')} {v['successes']}/{v['n']}" for k, v in rates.items())
    typer.echo(f"{res.model['name']} on {res.suite['name']}: {cells} (unscored {agg['unscored']})")
    typer.echo(f"wrote {out / 'results.json'} and {out / 'results.md'}")


def toolchain() -> None:
    """Install the raw checkers' pinned toolchain (svelte compiler, @sveltejs/mcp autofixer) in harnessfit's folder."""
    for tool, version in install_toolchains().items():
        typer.echo(f"{tool} {version}")


def register(eval_app: typer.Typer) -> None:
    eval_app.command("raw")(raw)
    eval_app.command("toolchain")(toolchain)
