"""CLI command of blinded pairwise judging (thin: parse options, call ``run_pairwise``, print)."""

from __future__ import annotations

from pathlib import Path

import typer

from harnessfit.eval.pairwise import run_pairwise

__all__ = ["register"]


def pairwise(
    results_a: Path = typer.Argument(..., help="Raw results of model A (results.json or its folder)."),
    results_b: Path = typer.Argument(..., help="Raw results of model B, on the same suite."),
    judge: str = typer.Option(..., "--judge", help="The judge: an OpenAI-compatible endpoint URL ending in /v1."),
    judge_model: str = typer.Option(None, "--judge-model", help="Model id at --judge (default: the first it lists)."),
    judge_key_env: str = typer.Option(
        None,
        "--judge-key-env",
        help="Environment variable holding the judge's API key (sent as a bearer token; never written anywhere).",
    ),
    rubric: bool = typer.Option(True, "--rubric/--no-rubric", help="Also score every answer on the 1–5 rubric."),
    temperature: float = typer.Option(0.0, "--judge-temperature", help="Judge sampling temperature."),
    max_tokens: int = typer.Option(512, "--judge-max-tokens", help="Output cap of each judge answer."),
    workers: int = typer.Option(1, "--workers", help="Judge requests in parallel."),
    out: Path = typer.Option(Path("runs/pairwise"), "--out", help="Output folder (results.json, results.md)."),
) -> None:
    """Judge two raw runs blind, each pair twice with the order reversed; report stable wins, flips, the rubric."""
    res = run_pairwise(
        results_a,
        results_b,
        judge,
        out,
        judge_model=judge_model,
        api_key_env=judge_key_env,
        rubric=rubric,
        temperature=temperature,
        max_tokens=max_tokens,
        workers=workers,
    )
    oc, agg = res.aggregates["outcomes"], res.aggregates
    flip = agg["flip_rate"]
    typer.echo(
        f"A {oc['a']} / B {oc['b']} / tie {oc['tie']} stable; order-sensitive {oc['order_sensitive']} "
        f"(flip rate {flip['successes']}/{flip['n']}); unparseable {oc['unparseable']}; "
        f"judge errors {oc['judge_error']}"
    )
    for side, r in agg.get("rubric", {}).items():
        typer.echo(f"rubric {side.upper()}: mean {r['mean']} (n {r['n']}, unparseable {r['unparseable']})")
    typer.echo(f"wrote {out / 'results.json'} and {out / 'results.md'}")


def register(eval_app: typer.Typer) -> None:
    eval_app.command("pairwise")(pairwise)
