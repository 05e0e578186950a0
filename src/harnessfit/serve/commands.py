"""CLI commands of the serve stage (thin: parse options, call the stage's public functions, print)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    _probe_command(app)

    @app.command("serve")
    def serve(
        model: str = typer.Argument(..., help="Embedded alias (smollm2-135m), a local model folder, or a Hugging Face id."),
        adapter: Path | None = typer.Option(None, "--adapter", help="LoRA adapter folder (PEFT) to apply."),
        tokenizer: Path | None = typer.Option(
            None, "--tokenizer", help="Tokenizer folder with the training chat template (default: found beside the "
            "adapter, in MODEL/tokenizer, or chosen like training does)."
        ),
        backend: str = typer.Option("auto", "--backend", help="builtin (CPU, transformers), vllm (GPU), or auto."),
        port: int = typer.Option(8000, "--port", help="Port on 127.0.0.1 (0 = any free port)."),
        max_tokens: int = typer.Option(512, "--max-tokens", help="Server-side output cap; a request may ask for less."),
        model_id: str | None = typer.Option(None, "--model-id", help="Model id clients send (default: adapter or model name)."),
        config_dir: Path | None = typer.Option(
            None, "--pi-config", help="Write Pi's models.json/settings.json for this server into this folder (the "
            "harness's client config: Harness.write_client_config)."
        ),
        harness: str | None = typer.Option(
            None, "--harness", help="With --pi-config: the installed Pi the config is for, as pi@VERSION (default: "
            "the one the adapter or merged model was trained for, else the newest committed card; another is "
            "refused); the printed command runs that version with its isolation flags."
        ),
        threads: int = typer.Option(1, "--threads", help="torch threads of the built-in backend."),
        max_queue: int = typer.Option(16, "--max-queue", min=1, help="Chat requests admitted at once (the one "
                                      "generating + those waiting); more get HTTP 429 with Retry-After. Built-in "
                                      "backend."),
        best_of: int = typer.Option(1, "--best-of", help="Sample up to N candidates per request and return the first "
                                    "whose tool calls pass the verifier (else the best-scoring one); built-in backend."),
        verifier: str = typer.Option("card", "--verifier", help="What checks candidates with --best-of: card (the "
                                     "harness card's validator + the verifiable rewards)."),
        best_of_temperature: float = typer.Option(0.7, "--best-of-temperature", help="Sampling temperature of "
                                                  "candidates 2..N when the request asks for greedy."),
        best_of_log: Path | None = typer.Option(None, "--best-of-log", help="Append one JSON line per request "
                                                "(candidates tried, which passed) to this file."),
        capture_dir: Path | None = typer.Option(None, "--capture-dir", help="Record what the engine sampled for "
                                                "every request (prompt ids, sampled ids, their processed logprobs, "
                                                "loss mask) per episode (the client's API key) in DIR/<key>.jsonl, "
                                                "TRL's harness TrainingTrace shape; built-in backend."),
        temperature: float | None = typer.Option(None, "--temperature", min=0.0, max=2.0, help="Sampling temperature "
                                                 "for requests that name none (Pi sends none; default greedy): RL "
                                                 "rollouts sample at the training temperature; built-in backend."),
        ready_file: Path | None = typer.Option(None, "--ready-file", hidden=True),
    ) -> None:
        """Serve MODEL as an OpenAI-compatible endpoint on 127.0.0.1 (/v1/models, /v1/chat/completions)."""
        from harnessfit.errors import UserError
        from harnessfit.serve.launcher import choose_backend

        if harness is not None and config_dir is None:
            raise UserError("--harness names the Pi a --pi-config is written for: give --pi-config DIR too")
        target = _config_harness(harness, model, adapter) if config_dir is not None else None
        kind = choose_backend(backend)
        if best_of > 1 and kind == "vllm":
            raise UserError("--best-of needs the built-in backend (--backend builtin)")
        if capture_dir is not None and (kind == "vllm" or best_of > 1):
            raise UserError("--capture-dir needs the built-in backend without --best-of (vLLM returns token ids and "
                            "logprobs itself: --return-tokens-as-token-ids --logprobs-mode processed_logprobs)")
        if temperature is not None and kind == "vllm":
            raise UserError("--temperature is the built-in backend's default; vLLM takes it from the request")
        if verifier not in ("card",):
            raise UserError(f"unknown --verifier {verifier!r}: use card")
        if kind == "vllm":
            _serve_vllm(model, adapter, tokenizer, port, max_tokens, model_id, config_dir, target)
            return
        from harnessfit.serve.engine import load_engine
        from harnessfit.serve.server import serve_engine

        typer.echo(f"loading {model}{f' + {adapter}' if adapter else ''} …", err=True)
        engine = load_engine(model, adapter=adapter, tokenizer=tokenizer, max_tokens=max_tokens, model_id=model_id,
                             threads=threads)
        engine.default_temperature = temperature
        if best_of > 1:
            from harnessfit.serve.bestof import BestOfEngine, CardVerifier

            engine = BestOfEngine(engine, best_of, CardVerifier(), temperature=best_of_temperature,
                                  log_path=best_of_log)
            typer.echo(f"best of {best_of} candidates per request, verified by the harness card", err=True)

        def ready(base_url: str) -> None:
            if config_dir is not None:
                _write_config(config_dir, target, base_url, engine.model_id, engine.context_window or 32768,
                              engine.max_tokens)
            typer.echo(f"serving {engine.model_id} at {base_url} (stop tokens {engine.stop_ids}, "
                       f"max {engine.max_tokens} tokens); Ctrl-C to stop", err=True)

        serve_engine(engine, port=port, ready_file=ready_file, on_ready=ready, max_queue=max_queue,
                     capture_dir=capture_dir)


def _probe_command(app: typer.Typer) -> None:
    @app.command("probe-endpoint")
    def probe_endpoint_cmd(
        base_url: str = typer.Argument(..., help="OpenAI-compatible endpoint root, e.g. http://127.0.0.1:8000/v1."),
        model_id: str | None = typer.Option(None, "--model-id", help="Model id to probe (default: the first the "
                                            "endpoint lists)."),
        timeout: float = typer.Option(120.0, "--timeout", help="Seconds per probe request."),
    ) -> None:
        """Check an endpoint can feed RL training from what it sampled: token ids, processed logprobs (fatal), a
        tool call for a trivial prompt (warning). Exit 1 with one line naming what is missing and the fix."""
        from harnessfit.errors import UserError
        from harnessfit.serve.probe_endpoint import probe_endpoint, served_model

        report = probe_endpoint(base_url, model_id or served_model(base_url, timeout), timeout=timeout)
        for check in report.checks:
            typer.echo(f"{'ok  ' if check.ok else ('FAIL' if check.fatal else 'warn')} {check.name}: {check.detail}")
        if report.problem is not None:
            raise UserError(report.problem)


def _config_harness(harness: str | None, model: str, adapter: Path | None) -> str:
    """The harness spec the config is for: ``--harness``, which must be the one the adapter (or merged model) was
    trained for, else that one, else the default; it must be installed (checked before a model is loaded)."""
    from harnessfit.harness.base import get_harness
    from harnessfit.harness.versions import model_harness, parse_harness

    spec = model_harness(harness, model, adapter, stage="serve --pi-config")
    get_harness(spec).binary(parse_harness(spec)[1])
    return spec


def _write_config(folder: Path, spec: str | None, base_url: str, model_id: str, context_window: int,
                  max_tokens: int) -> None:
    """The harness's client config for this server in ``folder``, and one line on how to run it against it: its
    binary, its isolation flags, the config folder."""
    from harnessfit.harness.base import get_harness
    from harnessfit.harness.versions import parse_harness

    agent = get_harness(spec)
    agent.write_client_config(folder, base_url, model_id, context_window=context_window, max_tokens=max_tokens)
    typer.echo(agent.client_config_note(folder, model_id, parse_harness(spec)[1]), err=True)


def _serve_vllm(model, adapter, tokenizer, port, max_tokens, model_id, config_dir, target=None) -> None:
    from harnessfit.serve.launcher import _free_port
    from harnessfit.serve.vllm import prepare_vllm

    real_port = port or _free_port()
    workdir = Path(tempfile.mkdtemp(prefix="harnessfit-vllm-"))
    launch = prepare_vllm(model, workdir=workdir, port=real_port, adapter=adapter, tokenizer=tokenizer,
                          max_tokens=max_tokens, model_id=model_id)
    base_url = f"http://127.0.0.1:{real_port}/v1"
    if config_dir is not None:
        _write_config(config_dir, target, base_url, launch.model_id, launch.context_window or 32768, max_tokens)
    typer.echo(f"serving {launch.model_id} at {base_url} via: {' '.join(launch.command)}", err=True)
    os.execvp(launch.command[0], launch.command)
