"""``merge_adapter``: fold a trained LoRA adapter into its pinned base model, giving a plain model folder to serve
(weights + tokenizer with the training template + generation_config with every stop id)."""

from __future__ import annotations

from pathlib import Path

import orjson

from harnessfit.errors import UserError
from harnessfit.models import apply_adapter, load_error, resolve_model

__all__ = ["merge_adapter"]


def merge_adapter(adapter_dir: Path, out_dir: Path, *, dtype: str = "auto") -> Path:
    """Merge ``adapter_dir`` (written by ``train_sft``) into its base model and save to ``out_dir``.

    The base is loaded unquantized (a QLoRA adapter merges into full-precision weights). ``dtype``: 'auto' keeps the
    base's stored dtype, or 'bf16' / 'fp32'.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    adapter_dir = Path(adapter_dir)
    cfg_path = adapter_dir / "adapter_config.json"
    if not cfg_path.is_file():
        raise UserError(f"{adapter_dir} is not an adapter folder (no adapter_config.json)")
    meta_path = adapter_dir / "harnessfit_adapter.json"
    meta = orjson.loads(meta_path.read_bytes()) if meta_path.is_file() else {}
    base = meta.get("base_model_path") or orjson.loads(cfg_path.read_bytes()).get("base_model_name_or_path")
    if not base:
        raise UserError(f"{adapter_dir} does not name its base model")
    if Path(base).is_absolute() and not Path(base).is_dir():
        spec = meta.get("base_model")
        if spec:
            base = str(resolve_model(spec))
        if not Path(base).is_dir():
            raise UserError(
                f"base model folder {base} is gone: re-create it (e.g. `harnessfit` re-converts the "
                "embedded model) or edit base_model_path in harnessfit_adapter.json"
            )
    pinned = meta.get("base_model_revision")
    if pinned and pinned.startswith("sha256:") and Path(base).is_dir():
        # heavy: train.run pulls torch/transformers/peft; a merge without a pinned revision needs none of it
        from harnessfit.train.run import model_fingerprint

        now = model_fingerprint(Path(base))
        if now != pinned:
            raise UserError(
                f"base model at {base} changed since training (pinned {pinned[:19]}…, found {now[:19]}…): "
                "merge into the exact base the adapter was trained on"
            )
    if dtype not in ("auto", "bf16", "fp32"):
        raise UserError(f"unknown --dtype {dtype!r}: use auto, bf16 or fp32")
    torch_dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}.get(dtype, "auto")
    try:
        model = AutoModelForCausalLM.from_pretrained(base, dtype=torch_dtype)
    except Exception as exc:  # noqa: BLE001 - one line for the user
        raise load_error("the base model", base, exc) from None
    merged = apply_adapter(model, adapter_dir, base_hint=base).merge_and_unload()
    try:
        tok = AutoTokenizer.from_pretrained(adapter_dir)
    except Exception as exc:  # noqa: BLE001 - one line for the user
        raise load_error("the adapter's tokenizer", adapter_dir, exc) from None
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(str(out_dir))
    tok.save_pretrained(str(out_dir))
    try:
        gen = GenerationConfig.from_pretrained(base)
    except OSError:
        gen = GenerationConfig.from_model_config(merged.config)
    stops = meta.get("stop_token_ids")
    if stops:
        eos = gen.eos_token_id if isinstance(gen.eos_token_id, list) else [gen.eos_token_id]
        gen.eos_token_id = sorted({int(x) for x in [*eos, *stops] if x is not None})
    if gen.pad_token_id is None and tok.pad_token_id is not None:
        gen.pad_token_id = tok.pad_token_id
    gen.save_pretrained(str(out_dir))
    (out_dir / "harnessfit_merged.json").write_bytes(
        orjson.dumps(
            {
                "adapter": str(adapter_dir.resolve()),
                "harness": meta.get("harness"),
                "base_model": meta.get("base_model", base),
                "base_model_path": base,
                "base_model_revision": pinned,
                "template": meta.get("template"),
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    return out_dir
