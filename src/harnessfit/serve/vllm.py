"""The vLLM backend (GPU machines): build the ``vllm serve`` command that serves a model exactly as it was trained.

Why a builder and not vLLM's defaults: vLLM would otherwise use the model's native chat template (SmolLM2's ignores
tools), stop only on what its own generation config says, and not parse tool calls. The launcher pins each of these:
the training template as a ``--chat-template`` file, Hermes tool-call parsing (the ``<tool_call>`` format the
template teaches), a ``--generation-config`` folder whose ``eos_token_id`` lists every stop id, whose
``max_new_tokens`` is the server's output cap and whose ``temperature`` is the server's (0, greedy, unless asked:
vLLM samples a request that names no temperature, as Pi's do not, at its generation config's, else at 1.0), LoRA
adapters as named modules, and loopback only.

vLLM's ``hermes`` parser re-serialises arguments it parses; the built-in backend is the reference for "arguments
exactly as written". Requests may still ask for more than ``max_new_tokens`` on vLLM (it is a default there).
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path

from harnessfit.models import load_tokenizer, native_context_length
from harnessfit.paths import home
from harnessfit.serve.sources import collect_stop_ids, resolve_source

__all__ = ["VllmLaunch", "vllm_available", "vllm_executable", "build_vllm_command", "prepare_vllm"]


def vllm_executable() -> str | None:
    """The ``vllm`` program to run, or None: ``$HARNESSFIT_VLLM`` when set, else the one ``make setup GPU=1``
    installs into its own virtualenv (``$HARNESSFIT_HOME/vllm/bin/vllm``: vLLM pins a torch and a transformers of its
    own, so it does not share harnessfit's), else this environment's when vLLM is importable here."""
    import os
    import shutil

    env = os.environ.get("HARNESSFIT_VLLM", "").strip()
    if env:
        return env if Path(env).is_file() else None
    own = home() / "vllm" / "bin" / "vllm"
    if own.is_file():
        return str(own)
    if importlib.util.find_spec("vllm") is not None:
        return shutil.which("vllm") or "vllm"
    return None


def vllm_available() -> bool:
    """True when a vLLM program is found (``vllm_executable``) and a CUDA device is visible (the only case ``auto``
    picks vLLM)."""
    if vllm_executable() is None:
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken torch install means "no"
        return False


@dataclass(frozen=True)
class VllmLaunch:
    """A ready-to-run ``vllm serve`` command and the model id clients must send."""

    command: list[str]
    model_id: str
    port: int
    files: dict[str, Path] = field(default_factory=dict)
    context_window: int | None = None  # --max-model-len, else the model's native context (what vLLM uses)


def build_vllm_command(
    model_path: str,
    *,
    port: int,
    served_name: str,
    chat_template: Path,
    generation_config_dir: Path,
    adapter: Path | None = None,
    adapter_name: str | None = None,
    lora_rank: int | None = None,
    max_model_len: int | None = None,
    executable: str = "vllm",
    extra_args: list[str] | None = None,
) -> list[str]:
    """The argument list; pure (no files read), so it is easy to check."""
    cmd = [
        executable,
        "serve",
        str(model_path),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--served-model-name",
        served_name,
        "--chat-template",
        str(chat_template),
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
        "--generation-config",
        str(generation_config_dir),
    ]
    if max_model_len:
        cmd += ["--max-model-len", str(max_model_len)]
    if adapter is not None:
        name = adapter_name or adapter.name
        cmd += ["--enable-lora", "--lora-modules", f"{name}={adapter}"]
        if lora_rank:
            cmd += ["--max-lora-rank", str(max(8, lora_rank))]
    cmd += list(extra_args or [])
    return cmd


def _lora_rank(adapter: Path) -> int | None:
    try:
        config = json.loads((adapter / "adapter_config.json").read_text())
    except (OSError, ValueError):
        return None
    rank = config.get("r")
    ranks = [rank] if isinstance(rank, int) else []
    ranks += [v for v in (config.get("rank_pattern") or {}).values() if isinstance(v, int)]
    return max(ranks) if ranks else None


def prepare_vllm(
    model: str,
    *,
    workdir: Path,
    port: int,
    adapter: Path | None = None,
    tokenizer: Path | None = None,
    max_tokens: int = 512,
    max_model_len: int | None = None,
    model_id: str | None = None,
    temperature: float | None = None,
) -> VllmLaunch:
    """Resolve the model/adapter/tokenizer like the built-in backend does, write the template and generation config
    files into ``workdir``, and return the command. Needs no GPU (tokenizer files only). ``temperature``: for
    requests that name none (``serve --temperature``; default 0, greedy, as the built-in backend)."""
    source = resolve_source(model, adapter=adapter, tokenizer=tokenizer)
    tok = load_tokenizer(str(source.tokenizer_dir or model), template="auto")
    workdir.mkdir(parents=True, exist_ok=True)
    template = workdir / "chat_template.jinja"
    template.write_text(tok.chat_template)
    gen_dir = workdir / "generation"
    gen_dir.mkdir(exist_ok=True)
    stops = collect_stop_ids(tok, source)
    temp = temperature or 0.0
    gen = {"eos_token_id": stops, "max_new_tokens": max_tokens, "do_sample": temp > 0, "temperature": temp}
    (gen_dir / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    base_name = Path(source.model).name if source.model_is_local else source.model
    if source.adapter is not None:
        served = model_id or source.adapter.name
        base_served = f"{base_name}-base" if base_name == served else base_name
    else:
        served = model_id or base_name
        base_served = served
    cmd = build_vllm_command(
        source.model_path,
        port=port,
        served_name=base_served,
        chat_template=template,
        generation_config_dir=gen_dir,
        adapter=source.adapter,
        adapter_name=served if source.adapter else None,
        lora_rank=_lora_rank(source.adapter) if source.adapter else None,
        max_model_len=max_model_len,
        executable=vllm_executable() or "vllm",
    )
    return VllmLaunch(
        command=cmd,
        model_id=served,
        port=port,
        files={"chat_template": template, "generation": gen_dir},
        context_window=max_model_len or native_context_length(source.model_path),
    )
