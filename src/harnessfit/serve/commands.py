"""CLI commands of the serve stage (thin: parse options, call the stage's public functions, print)."""

from __future__ import annotations

from pathlib import Path

import typer

from harnessfit.errors import UserError
from harnessfit.serve.probe_endpoint import probe_endpoint, served_model
from harnessfit.serve.serving import serve_model

__all__ = ["register"]


def serve_command(
    model: str = typer.Argument(..., help="Embedded alias (smollm2-135m), a local model folder, or a Hugging Face id."),
    adapter: Path | None = typer.Option(None, "--adapter", help="LoRA adapter folder (PEFT) to apply."),
    tokenizer: Path | None = typer.Option(
        None,
        "--tokenizer",
        help="Tokenizer folder with the training chat template (default: found beside the "
        "adapter, in MODEL/tokenizer, or chosen like training does).",
    ),
    backend: str = typer.Option("auto", "--backend", help="builtin (CPU, transformers), vllm (GPU), or auto."),
    port: int = typer.Option(8000, "--port", help="Port on 127.0.0.1 (0 = any free port)."),
    max_tokens: int = typer.Option(512, "--max-tokens", help="Server-side output cap; a request may ask for less."),
    model_id: str | None = typer.Option(
        None, "--model-id", help="Model id clients send (default: adapter or model name)."
    ),
    config_dir: Path | None = typer.Option(
        None,
        "--pi-config",
        help="Write Pi's models.json/settings.json for this server into this folder (the "
        "harness's client config: Harness.write_client_config).",
    ),
    harness: str | None = typer.Option(
        None,
        "--harness",
        help="With --pi-config: the installed Pi the config is for, as pi@VERSION (default: "
        "the one the adapter or merged model was trained for, else the newest committed card; another is "
        "refused); the printed command runs that version with its isolation flags.",
    ),
    threads: int = typer.Option(1, "--threads", help="torch threads of the built-in backend."),
    max_queue: int = typer.Option(
        16,
        "--max-queue",
        min=1,
        help="Chat requests admitted at once (the one "
        "generating + those waiting); more get HTTP 429 with Retry-After. Built-in "
        "backend.",
    ),
    best_of: int = typer.Option(
        1,
        "--best-of",
        help="Sample up to N candidates per request and return the first "
        "whose tool calls pass the verifier (else the best-scoring one); built-in backend.",
    ),
    verifier: str = typer.Option(
        "card",
        "--verifier",
        help="What checks candidates with --best-of: card (the harness card's validator + the verifiable rewards).",
    ),
    best_of_temperature: float = typer.Option(
        0.7, "--best-of-temperature", help="Sampling temperature of candidates 2..N when the request asks for greedy."
    ),
    best_of_log: Path | None = typer.Option(
        None, "--best-of-log", help="Append one JSON line per request (candidates tried, which passed) to this file."
    ),
    capture_dir: Path | None = typer.Option(
        None,
        "--capture-dir",
        help="Record what the engine sampled for "
        "every request (prompt ids, sampled ids, their processed logprobs, "
        "loss mask) per episode (the client's API key) in DIR/<key>.jsonl, "
        "TRL's harness TrainingTrace shape; built-in backend.",
    ),
    temperature: float | None = typer.Option(
        None,
        "--temperature",
        min=0.0,
        max=2.0,
        help="Sampling temperature "
        "for requests that name none (Pi sends none; default 0, greedy): RL "
        "rollouts sample at the training temperature, `eval agent --seeds N` at 0.7.",
    ),
    ready_file: Path | None = typer.Option(None, "--ready-file", hidden=True),
) -> None:
    """Serve MODEL as an OpenAI-compatible endpoint on 127.0.0.1 (/v1/models, /v1/chat/completions)."""
    serve_model(
        model,
        adapter=adapter,
        tokenizer=tokenizer,
        backend=backend,
        port=port,
        max_tokens=max_tokens,
        model_id=model_id,
        config_dir=config_dir,
        harness=harness,
        threads=threads,
        max_queue=max_queue,
        best_of=best_of,
        verifier=verifier,
        best_of_temperature=best_of_temperature,
        best_of_log=best_of_log,
        capture_dir=capture_dir,
        temperature=temperature,
        ready_file=ready_file,
    )


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.command("serve")(serve_command)
    app.command("probe-endpoint")(probe_endpoint_command)


def probe_endpoint_command(
    base_url: str = typer.Argument(..., help="OpenAI-compatible endpoint root, e.g. http://127.0.0.1:8000/v1."),
    model_id: str | None = typer.Option(
        None, "--model-id", help="Model id to probe (default: the first the endpoint lists)."
    ),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds per probe request."),
) -> None:
    """Check an endpoint can feed RL training from what it sampled: token ids, processed logprobs (fatal), a tool
    call for a trivial prompt (warning). Exit 1 with one line naming what is missing and the fix."""
    report = probe_endpoint(base_url, model_id or served_model(base_url, timeout), timeout=timeout)
    for check in report.checks:
        typer.echo(f"{'ok  ' if check.ok else ('FAIL' if check.fatal else 'warn')} {check.name}: {check.detail}")
    if report.problem is not None:
        raise UserError(report.problem)
