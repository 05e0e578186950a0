"""SFT training throughput: TRL's stock configuration vs harnessfit's recipe fast path, in the same run.

Random-initialised models of real shapes (throughput does not depend on weight values), random token ids with record
lengths drawn like a real agent-SFT set (min 1,393, median 4,868, p95 8,519, max 12,195), loss on the last 15% of
each record; LoRA r 32 / alpha 64 / dropout 0.05 on all linear projections, 8 records per optimizer step.
The first optimizer step is warm-up and not timed; the stock baseline runs first and again last (run-to-run noise).

    python bench/train_throughput.py                       # GPU: qwen3-0.6b and qwen3-8b shapes
    python bench/train_throughput.py --device cpu --shape tiny
Prints one JSON object: tokens/s, peak GiB, ratio to stock, % of the FLOP limit (4·N + attention per token, against
a matmul ceiling measured in the same run).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import random
import resource
import sys
import tempfile
import time

import torch

SHAPES = {
    "qwen3-8b": dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=False),
    "qwen3-0.6b": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                       num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=True),
    "tiny": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=32, vocab_size=2048, tie_word_embeddings=True),
}
LEN_MIN, LEN_MED, LEN_P95, LEN_MAX = 1393, 4868, 8519, 12195


def draw_lengths(n: int, scale: float, seed: int = 0) -> list[int]:
    """Log-normal through the median and p95, clipped to [min, max], then scaled (CPU runs use short records)."""
    rng = random.Random(seed)
    sigma = math.log(LEN_P95 / LEN_MED) / 1.645
    return [max(16, int(scale * min(LEN_MAX, max(LEN_MIN, rng.lognormvariate(math.log(LEN_MED), sigma)))))
            for _ in range(n)]


def make_dataset(lengths: list[int], vocab: int):
    from datasets import Dataset

    rng = random.Random(1)
    rows = []
    for n in lengths:
        sup = max(1, int(n * 0.15))
        rows.append({"input_ids": [rng.randrange(2, vocab) for _ in range(n)],
                     "assistant_masks": [0] * (n - sup) + [1] * sup})
    return Dataset.from_list(rows)


def make_tokenizer(vocab: int):
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="t0", eos_token="t1")


def matmul_ceiling(device: str) -> float:
    """Measured dense matmul FLOP/s (bf16 8192² on GPU, fp32 1024² on CPU)."""
    n, dt = (8192, torch.bfloat16) if device == "cuda" else (1024, torch.float32)
    a = torch.randn(n, n, device=device, dtype=dt)
    b = torch.randn(n, n, device=device, dtype=dt)
    for _ in range(3):
        a @ b
    reps = 10 if device == "cuda" else 5
    if device == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    if device == "cuda":
        torch.cuda.synchronize()
    return 2 * n**3 * reps / (time.perf_counter() - t)


def flops_per_token(cfg, lengths: list[int]) -> float:
    """4·N (forward + activation gradients of every linear layer incl. the LM head) + attention: per token, forward
    QKᵀ and AV cost 4·ctx·d_attn per layer with ctx ≈ L/2 (causal), and training costs 3x the forward."""
    h, f, layers = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers
    hd = getattr(cfg, "head_dim", h // cfg.num_attention_heads)
    q, kv = cfg.num_attention_heads * hd, cfg.num_key_value_heads * hd
    n_linear = layers * (h * q + 2 * h * kv + q * h + 3 * h * f) + cfg.vocab_size * h
    mean_ctx = sum(n * n for n in lengths) / sum(lengths) / 2  # token-weighted average causal context
    return 4 * n_linear + 3 * 4 * mean_ctx * q * layers


def _peak_gib(device: str) -> float:
    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # process peak RSS so far (KiB → GiB)


def run_variant(name: str, shape: str, device: str, lengths: list[int], *, fast: bool, steps: int) -> dict:
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, Qwen3Config
    from trl import SFTConfig, SFTTrainer

    from harnessfit.train.fastpath import plan_fast_path
    from harnessfit.train.config import load_sft_config

    torch.manual_seed(0)
    cfg = Qwen3Config(**SHAPES[shape], max_position_embeddings=40960, rope_theta=1e6)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    if fast:
        plan = plan_fast_path(load_sft_config(None, quantization="none", use_cpu=device == "cpu"), cfg, lengths)
        attn, per_dev, ga, gc_on = plan.attn_implementation, plan.per_device_batch, plan.grad_accum, plan.gradient_checkpointing
        liger, padding_free = plan.liger, plan.padding_free
    else:
        plan = None
        attn, per_dev, ga, gc_on, liger, padding_free = "sdpa", 1, 8, True, False, False
    n_records = (steps + 1) * per_dev * ga
    ds = make_dataset(lengths[:n_records], cfg.vocab_size)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=attn)
    if liger:
        from liger_kernel.transformers import _apply_liger_kernel_to_instance

        _apply_liger_kernel_to_instance(model=model, fused_linear_cross_entropy=False)
    args = SFTConfig(output_dir=tempfile.mkdtemp(prefix=f"bench_{name}_"), max_steps=steps + 1,
                     per_device_train_batch_size=per_dev, gradient_accumulation_steps=ga, padding_free=padding_free,
                     learning_rate=1e-4, bf16=device == "cuda", use_cpu=device == "cpu", gradient_checkpointing=gc_on,
                     max_length=None if padding_free else 16384, logging_steps=1, report_to="none",
                     save_strategy="no", dataloader_num_workers=0, seed=42, disable_tqdm=True)
    lora = LoraConfig(r=32, lora_alpha=64, lora_dropout=0.05, task_type="CAUSAL_LM", target_modules="all-linear")
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=make_tokenizer(cfg.vocab_size),
                         peft_config=lora)
    marks: list[float] = []
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)  # stdout carries only the final JSON

    class StepClock(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if device == "cuda":
                torch.cuda.synchronize()
            marks.append(time.perf_counter())

    trainer.add_callback(StepClock())
    trainer.train()
    tokens_per_step = [sum(lengths[i * per_dev * ga:(i + 1) * per_dev * ga]) for i in range(steps + 1)]
    timed_tokens = sum(tokens_per_step[1:])  # step 0 is warm-up
    secs = marks[-1] - marks[0]
    res = {"variant": name, "shape": shape, "attn": attn, "records_per_row": per_dev, "grad_accum": ga,
           "gradient_checkpointing": gc_on, "liger": liger, "padding_free": padding_free, "timed_steps": steps,
           "tokens": timed_tokens, "seconds": round(secs, 3), "tokens_per_s": round(timed_tokens / secs, 1),
           "peak_gib": round(_peak_gib(device), 2), "peak_kind": "cuda max allocated" if device == "cuda" else "process peak RSS",
           "fast_path_notes": plan.notes if plan else []}
    del trainer, model
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--shape", default="auto", help="tiny, qwen3-0.6b, qwen3-8b, or 'auto' (GPU: both real shapes)")
    ap.add_argument("--steps", type=int, default=3, help="timed optimizer steps per variant (after one warm-up)")
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    device = a.device if a.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if a.threads:
        torch.set_num_threads(a.threads)
    shapes = ([a.shape] if a.shape != "auto" else (["qwen3-0.6b", "qwen3-8b"] if device == "cuda" else ["tiny"]))
    scale = 1.0 if device == "cuda" and "tiny" not in shapes else 0.04  # CPU: ~56..490-token records
    ceiling = matmul_ceiling(device)
    out = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "torch": torch.__version__,
           "matmul_ceiling_tflops": round(ceiling / 1e12, 3), "length_scale": scale, "results": []}
    from transformers import Qwen3Config

    for shape in shapes:
        lengths = draw_lengths(8 * (a.steps + 1), scale)
        cfg = Qwen3Config(**SHAPES[shape])
        fpt = flops_per_token(cfg, lengths)
        limit = ceiling / fpt
        rows = []
        for name, fast in (("trl_stock", False), ("harnessfit", True), ("trl_stock_repeat", False)):
            try:
                r = run_variant(name, shape, device, lengths, fast=fast, steps=a.steps)
                r["pct_of_flop_limit"] = round(100 * r["tokens_per_s"] / limit, 1)
            except Exception as exc:  # one failing variant must not lose the others
                r = {"variant": name, "shape": shape, "error": repr(exc)[:400]}
            rows.append(r)
            print(json.dumps(r), file=sys.stderr, flush=True)
        stock = [r["tokens_per_s"] for r in rows if r["variant"].startswith("trl_stock") and "tokens_per_s" in r]
        fast_r = next((r for r in rows if r["variant"] == "harnessfit" and "tokens_per_s" in r), None)
        out["results"].append({
            "shape": shape, "flops_per_token": round(fpt), "flop_limit_tokens_per_s": round(limit, 1),
            "variants": rows,
            "ratio_vs_stock_best": round(fast_r["tokens_per_s"] / max(stock), 3) if fast_r and stock else None,
            "ratio_vs_stock_first": round(fast_r["tokens_per_s"] / stock[0], 3) if fast_r and stock else None,
        })
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
