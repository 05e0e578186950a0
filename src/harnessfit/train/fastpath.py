"""Deciding the fast-path switches for one run: device, dtype, quantization, attention kernel, packing, gradient
checkpointing, Liger, torch.compile.

Each recipe switch is 'auto' by default and resolved here from what the machine has, so a recipe written on a GPU box
also runs on a laptop; every decision comes with a one-line note that goes into the report.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import torch
from pydantic import BaseModel

from harnessfit.errors import UserError
from harnessfit.train.config import HarnessfitSFTConfig
from harnessfit.train.trunk import trunk_cache_bytes

__all__ = ["FastPath", "plan_fast_path", "activation_bytes_estimate"]

GIB = 1024**3


class FastPath(BaseModel):
    """Resolved switches for one run plus the reason for each (shown once, written to the report)."""

    device: str
    dtype: str  # "bf16" | "fp32"
    quantization: str  # "nf4" | "none"
    attn_implementation: str
    padding_free: bool
    records_per_row: int
    per_device_batch: int
    grad_accum: int
    gradient_checkpointing: bool
    liger: bool
    torch_compile: bool
    trunk_cache_bytes: int = 0  # memory the trunk cache may hold (0 = no cache; ``train.trunk``)
    memory_estimate_gib: float | None = None
    notes: list[str] = []


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def activation_bytes_estimate(cfg: Any, row_tokens: int, dtype_bytes: int) -> float:
    """Activations kept for backward without checkpointing, per row: tokens x layers x (10 h + 4 ffn) x bytes.

    Calibrated against the anchor run (Qwen3-8B shape, 12,195 tokens, bf16, no checkpointing: 92.7 GiB peak incl.
    16 GiB of weights); deliberately on the high side.
    """
    h = getattr(cfg, "hidden_size", 0) or 0
    ffn = getattr(cfg, "intermediate_size", 4 * h) or 4 * h
    layers = getattr(cfg, "num_hidden_layers", 0) or 0
    return float(row_tokens) * layers * (10 * h + 4 * ffn) * dtype_bytes


def _param_bytes(cfg: Any, dtype_bytes: float) -> float:
    h = getattr(cfg, "hidden_size", 0) or 0
    ffn = getattr(cfg, "intermediate_size", 4 * h) or 4 * h
    layers = getattr(cfg, "num_hidden_layers", 0) or 0
    vocab = getattr(cfg, "vocab_size", 0) or 0
    return (layers * (4 * h * h + 3 * h * ffn) + 2 * vocab * h) * dtype_bytes


def plan_fast_path(recipe: HarnessfitSFTConfig, model_cfg: Any, lengths: list[int], *, world_size: int = 1) -> FastPath:
    """Resolve every 'auto' switch of ``recipe`` for this machine, the model's config and the record lengths."""
    notes: list[str] = []
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda and not recipe.use_cpu else "cpu"
    on_gpu = device == "cuda"
    dtype = "bf16" if recipe.bf16 else "fp32"  # bf16 unset (auto) was resolved by the config: bf16 on a GPU only
    if dtype == "bf16" and not on_gpu:
        notes.append("bf16 on CPU is about 10x slower than fp32 here (kept because the recipe asks for it)")

    quant = recipe.quantization
    if quant == "auto":
        quant = "nf4" if on_gpu and _has("bitsandbytes") else "none"
        if quant == "none":
            notes.append("QLoRA (NF4) needs CUDA + bitsandbytes: training plain LoRA on full-precision weights")
    elif quant == "nf4" and not _has("bitsandbytes"):
        raise UserError("quantization: nf4 needs bitsandbytes: pip install bitsandbytes, or set quantization: auto")

    attn = recipe.attn_implementation
    if attn == "auto":
        if on_gpu and recipe.padding_free:
            attn = "flex_attention"
            notes.append("flex attention: block-sparse per-record masks for packed rows")
        else:
            attn = "sdpa"

    rpr = recipe.records_per_row
    if rpr is None:  # auto
        rpr = 4 if (on_gpu and recipe.padding_free and recipe.records_per_step() % 4 == 0) else 1
    if not recipe.padding_free:
        rpr = 1
    per_step = recipe.records_per_step()
    if rpr > 1:
        per_device, accum = rpr, max(1, per_step // (rpr * world_size))
    else:
        per_device, accum = (
            recipe.per_device_train_batch_size,
            max(1, recipe.gradient_accumulation_steps // world_size),
        )
    if world_size > 1 and per_step % (per_device * world_size):
        notes.append(f"{per_step} records per step do not split evenly over {world_size} processes")

    dtype_bytes = 2 if dtype == "bf16" else 4
    longest = sorted(lengths, reverse=True)
    batch = recipe.per_device_train_batch_size
    row_tokens = sum(longest[:per_device]) if rpr > 1 else max(longest[:batch] or [0]) * batch
    est = activation_bytes_estimate(model_cfg, row_tokens, dtype_bytes)
    weights = _param_bytes(model_cfg, 0.55 if quant == "nf4" else dtype_bytes)
    est_gib = (est + weights) / GIB
    if recipe.checkpointing_auto:
        if on_gpu:
            total = torch.cuda.get_device_properties(0).total_memory / GIB
            gc_on = est_gib > 0.85 * total
            notes.append(
                f"gradient checkpointing {'on' if gc_on else 'off'}: estimated peak {est_gib:.1f} GiB "
                f"without it vs {total:.0f} GiB on the device"
            )
        else:
            gc_on = False
            notes.append("gradient checkpointing off on CPU (memory is not the limit; recomputation only costs time)")
    else:
        gc_on = bool(recipe.activation_checkpointing)

    liger = recipe.liger
    liger_on = (on_gpu and _has("liger_kernel")) if liger == "auto" else liger == "on"
    if liger_on and not _has("liger_kernel"):
        raise UserError("liger: on needs liger-kernel installed (GPU only); set liger: auto")
    if liger == "auto" and on_gpu and not liger_on:
        notes.append("liger-kernel not installed: standard layers (TRL's chunked LM-head loss is still used)")

    compile_on = bool(recipe.torch_compile)
    trunk = _trunk_budget(recipe, model_cfg, lengths, dtype_bytes, world_size, notes)
    return FastPath(
        device=device,
        dtype=dtype,
        quantization=quant,
        attn_implementation=attn,
        padding_free=recipe.padding_free,
        records_per_row=rpr,
        per_device_batch=per_device,
        grad_accum=accum,
        gradient_checkpointing=gc_on,
        liger=liger_on,
        torch_compile=compile_on,
        trunk_cache_bytes=trunk,
        memory_estimate_gib=round(est_gib, 2),
        notes=notes,
    )


def _trunk_budget(
    recipe: HarnessfitSFTConfig, model_cfg: Any, lengths: list[int], dtype_bytes: int, world_size: int, notes: list
) -> int:
    """Bytes the trunk cache may hold: 0 (off) when the recipe says off, or (auto) when no row is seen twice or
    several processes train; else what every row needs, capped at a quarter of the host's free memory."""
    import psutil  # only here: the one place that sizes a cache against host memory

    mode = recipe.trunk_cache
    if mode == "off":
        return 0
    n_rows = max(1, len(lengths))
    steps = recipe.max_steps if recipe.max_steps and recipe.max_steps > 0 else None
    passes = steps * recipe.records_per_step() * world_size / n_rows if steps else float(recipe.num_train_epochs)
    if mode == "auto" and passes <= 1:
        notes.append("trunk cache off: each row is trained on once, so there is nothing to reuse")
        return 0
    if mode == "auto" and world_size > 1:
        notes.append("trunk cache off with several processes (set trunk_cache: on to use it)")
        return 0
    need = trunk_cache_bytes(lengths, model_cfg, dtype_bytes)
    cap = psutil.virtual_memory().available // 4
    budget = min(need, cap)
    notes.append(
        f"trunk cache on: frozen lower layers computed once per row, {budget / GIB:.2f} GiB "
        f"({'all rows' if budget >= need else f'of the {need / GIB:.2f} GiB all rows need'})"
    )
    return max(1, budget)
