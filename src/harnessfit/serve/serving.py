"""``harnessfit serve``: serve a model as an OpenAI-compatible endpoint on 127.0.0.1, with the built-in engine
(CPU, transformers) or vLLM, and write the harness's client config for it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import typer

from harnessfit.errors import UserError
from harnessfit.harness.base import get_harness
from harnessfit.harness.versions import model_harness, parse_harness
from harnessfit.serve.launcher import _free_port, choose_backend
from harnessfit.serve.vllm import prepare_vllm

__all__ = ["serve_model"]


def serve_model(
    model: str,
    *,
    adapter: Path | None,
    tokenizer: Path | None,
    backend: str,
    port: int,
    max_tokens: int,
    model_id: str | None,
    config_dir: Path | None,
    harness: str | None,
    threads: int,
    max_queue: int,
    best_of: int,
    verifier: str,
    best_of_temperature: float,
    best_of_log: Path | None,
    capture_dir: Path | None,
    ready_file: Path | None,
    temperature: float | None = None,
) -> None:
    """Serve ``model`` until interrupted (the options are ``harnessfit serve``'s); vLLM replaces this process."""
    if harness is not None and config_dir is None:
        raise UserError("--harness names the Pi a --pi-config is written for: give --pi-config DIR too")
    target = _config_harness(harness, model, adapter) if config_dir is not None else None
    kind = choose_backend(backend)
    if best_of > 1 and kind == "vllm":
        raise UserError("--best-of needs the built-in backend (--backend builtin)")
    if capture_dir is not None and (kind == "vllm" or best_of > 1):
        raise UserError(
            "--capture-dir needs the built-in backend without --best-of (vLLM returns token ids and "
            "logprobs itself: --return-tokens-as-token-ids --logprobs-mode processed_logprobs)"
        )
    if verifier not in ("card",):
        raise UserError(f"unknown --verifier {verifier!r}: use card")
    if kind == "vllm":
        _serve_vllm(model, adapter, tokenizer, port, max_tokens, model_id, config_dir, target, temperature)
        return
    # heavy: the engine and the server pull fastapi/uvicorn; only the built-in backend's run needs them
    from harnessfit.serve.engine import load_engine
    from harnessfit.serve.server import serve_engine

    typer.echo(f"loading {model}{f' + {adapter}' if adapter else ''} …", err=True)
    engine: Any = load_engine(
        model, adapter=adapter, tokenizer=tokenizer, max_tokens=max_tokens, model_id=model_id, threads=threads
    )
    engine.default_temperature = temperature
    if best_of > 1:
        from harnessfit.serve.bestof import BestOfEngine, CardVerifier  # heavy: pulls fastapi (via the engine)

        engine = BestOfEngine(engine, best_of, CardVerifier(), temperature=best_of_temperature, log_path=best_of_log)
        typer.echo(f"best of {best_of} candidates per request, verified by the harness card", err=True)

    def ready(base_url: str) -> None:
        if config_dir is not None:
            _write_config(
                config_dir, target, base_url, engine.model_id, engine.context_window or 32768, engine.max_tokens
            )
        typer.echo(
            f"serving {engine.model_id} at {base_url} (stop tokens {engine.stop_ids}, "
            f"max {engine.max_tokens} tokens); Ctrl-C to stop",
            err=True,
        )

    serve_engine(engine, port=port, ready_file=ready_file, on_ready=ready, max_queue=max_queue, capture_dir=capture_dir)


def _config_harness(harness: str | None, model: str, adapter: Path | None) -> str:
    """The harness spec the config is for: ``--harness``, which must be the one the adapter (or merged model) was
    trained for, else that one, else the default; it must be installed (checked before a model is loaded)."""
    spec = model_harness(harness, model, adapter, stage="serve --pi-config")
    get_harness(spec).binary(parse_harness(spec)[1])
    return spec


def _write_config(
    folder: Path, spec: str | None, base_url: str, model_id: str, context_window: int, max_tokens: int
) -> None:
    """The harness's client config for this server in ``folder``, and one line on how to run it against it: its
    binary, its isolation flags, the config folder."""
    agent = get_harness(spec)
    agent.write_client_config(folder, base_url, model_id, context_window=context_window, max_tokens=max_tokens)
    typer.echo(agent.client_config_note(folder, model_id, parse_harness(spec)[1]), err=True)


def _serve_vllm(
    model, adapter, tokenizer, port, max_tokens, model_id, config_dir, target=None, temperature=None
) -> None:
    real_port = port or _free_port()
    workdir = Path(tempfile.mkdtemp(prefix="harnessfit-vllm-"))
    launch = prepare_vllm(
        model,
        workdir=workdir,
        port=real_port,
        adapter=adapter,
        tokenizer=tokenizer,
        max_tokens=max_tokens,
        model_id=model_id,
        temperature=temperature,
    )
    base_url = f"http://127.0.0.1:{real_port}/v1"
    if config_dir is not None:
        _write_config(config_dir, target, base_url, launch.model_id, launch.context_window or 32768, max_tokens)
    typer.echo(f"serving {launch.model_id} at {base_url} via: {' '.join(launch.command)}", err=True)
    os.execvp(launch.command[0], launch.command)
