"""CLI command of base-model probes (thin: parse options, call ``run_probe`` / ``probe_with_compare``, print)."""

from __future__ import annotations

from pathlib import Path

import typer

from harnessfit.eval.probe import probe_with_compare, run_probe
from harnessfit.harness.versions import parse_harness

__all__ = ["register"]


def probe(
    model: str = typer.Argument(
        ...,
        help="Model spec to serve (embedded alias, local folder, HF id) or a running "
        "OpenAI-compatible endpoint URL ending in /v1.",
    ),
    adapter: Path = typer.Option(None, "--adapter", help="LoRA adapter folder to serve with MODEL."),
    compare: Path = typer.Option(
        None,
        "--compare",
        help="A tuned adapter folder (probed with the same base) or "
        "earlier probe results, put beside this run in compare.md.",
    ),
    probes: Path = typer.Option(Path("examples/probes/default"), "--probes", help="Probe set folder (probes.yaml)."),
    samples: int = typer.Option(5, "--samples", help="Samples per probe."),
    temperature: float = typer.Option(0.7, "--temperature", help="Sampling temperature."),
    max_tokens: int = typer.Option(256, "--max-tokens", help="Output cap per reply."),
    model_id: str = typer.Option(None, "--model-id", help="Model id at an endpoint URL (default: the first listed)."),
    api_key_env: str = typer.Option(None, "--api-key-env", help="Environment variable holding the endpoint's key."),
    harness: str = typer.Option(
        None,
        "--harness",
        help="Pi whose prompt and tools are asked, as pi@VERSION (a "
        "committed card). Default: the one a harnessfit-trained model (--adapter, a merged "
        "model, the --compare adapter) was trained for, else the newest; another is refused.",
    ),
    out: Path = typer.Option(
        Path("runs/probe"),
        "--out",
        help="Output folder (results.json/md; with --compare base/, tuned/ and compare.md).",
    ),
) -> None:
    """Probe a model's raw tool-use behaviour under the harness's real system prompt and tools."""
    kwargs = {
        "samples": samples,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "model_id": model_id,
        "api_key_env": api_key_env,
        "pi_version": parse_harness(harness)[1] if harness else None,
    }
    if compare is not None:
        _base, _other, table = probe_with_compare(model, probes, out, compare=compare, adapter=adapter, **kwargs)
        typer.echo(table.read_text(encoding="utf-8"))
        return
    extra = {"adapter": adapter} if adapter is not None else {}
    res = run_probe(model, probes, out, **kwargs, **extra)
    rates = res.aggregates["rates"]
    typer.echo(
        f"{res.model['name']} under {res.harness}: tool call {rates['tool_call']['successes']}/"
        f"{rates['tool_call']['n']}, "
        f"answered without a tool {rates['answered_without_tool']['successes']}/"
        f"{rates['answered_without_tool']['n']}, token cap {rates['hit_token_cap']['successes']}/"
        f"{rates['hit_token_cap']['n']} (unscored {res.aggregates['unscored']})"
    )
    typer.echo(f"wrote {out / 'results.json'} and {out / 'results.md'}")


def register(app: typer.Typer) -> None:
    app.command("probe")(probe)
