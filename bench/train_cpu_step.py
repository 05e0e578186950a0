"""One CPU training step of the embedded model on a chain of synth shape: TRL's path as it runs on a CPU (the fused LM
head scoring every position, every layer run) vs harnessfit's (the head scoring the supervised positions only, then
also the trunk cache), in the same run.

The model is the real SmolLM2-135M with the CPU demo recipe's adapter (r 16 on layers 20-29); the chain is random
token ids of a median synth chain's shape (1,861 tokens, 177 supervised in 4 actions; `--audit DIR` takes the median
row of a real audit's train split instead). Each variant runs `--steps` forward+backward passes after one untimed
warm-up (for the trunk cache the warm-up is the step that fills it); the adapter gradients of every variant are
compared with the baseline's.

    .venv/bin/python bench/train_cpu_step.py [--steps 3] [--threads 2] [--audit out/audit]
Prints one JSON object: seconds per step per variant, the ratio to the baseline, the largest gradient difference.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

TARGETS = r".*\.layers\.(2[0-9])\.(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj)"  # the demo recipe's


def chain(audit: Path | None, n: int, supervised: int) -> tuple[list[int], list[int]]:
    """(ids, labels) of one chain: the median-length row of ``audit``'s train split, or random ids of that shape."""
    if audit is not None:
        import pyarrow.parquet as pq

        rows = sorted(pq.read_table(audit / "tokenized" / "train.parquet").to_pylist(), key=lambda r: len(r["input_ids"]))
        row = rows[len(rows) // 2]
        ids, mask = row["input_ids"], row["assistant_masks"]
    else:
        rng = random.Random(0)
        ids = [rng.randrange(3, 49152) for _ in range(n)]
        mask = [0] * n
        span = supervised // 4
        for k in range(4):  # four actions spread over the chain's second half
            start = n // 2 + k * (n // 8)
            mask[start : start + span] = [1] * span
    return ids, [t if m else -100 for t, m in zip(ids, mask, strict=True)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--audit", type=Path, default=None)
    ap.add_argument("--tokens", type=int, default=1861)
    ap.add_argument("--supervised", type=int, default=177)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    from peft import LoraConfig, get_peft_model
    from trl.trainer.utils import add_fused_lm_head

    from harnessfit.models import load_model
    from harnessfit.train.loss import _supervised_positions_only
    from harnessfit.train.trunk import TrunkCache

    ids, labels = chain(a.audit, a.tokens, a.supervised)
    inputs = {
        "input_ids": torch.tensor([ids]),
        "labels": torch.tensor([labels]),
        "position_ids": torch.arange(len(ids))[None],
    }
    model = load_model("smollm2-135m", attn_implementation="sdpa")
    add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=TARGETS))
    torch.manual_seed(0)
    for name, p in model.named_parameters():
        if "lora_B" in name:  # a trained-looking adapter, so the gradients are not trivially equal
            torch.nn.init.normal_(p, std=0.01)
    model.train()
    cache = TrunkCache(model, budget_bytes=2**31)

    def every_position():
        return model(**inputs, use_cache=False, fused_lm_head=True)

    def supervised_only():
        with _supervised_positions_only(True):
            return model(**inputs, use_cache=False, fused_lm_head=True)

    def trunk_cached():
        with _supervised_positions_only(True):
            return cache.forward(model, dict(inputs), [0])

    variants = {"trl_cpu": every_position, "supervised_head": supervised_only, "supervised_head+trunk_cache": trunk_cached}
    out: dict = {
        "bench": "train_cpu_step",
        "tokens": len(ids),
        "supervised": sum(1 for x in labels[1:] if x != -100),
        "threads": a.threads,
        "frozen_layers": cache.depth,
        "variants": {},
    }
    grads0 = None
    for name, run in variants.items():
        times = []
        for step in range(a.steps + 1):
            model.zero_grad()
            t0 = time.perf_counter()
            loss = -run().log_probs.sum()
            loss.backward()
            if step:
                times.append(time.perf_counter() - t0)
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
        grads0 = grads0 or grads
        diff = max(float((grads[n] - g).abs().max()) for n, g in grads0.items())
        out["variants"][name] = {"s_per_step": round(statistics.median(times), 3), "max_grad_diff": diff}
    base = out["variants"]["trl_cpu"]["s_per_step"]
    for v in out["variants"].values():
        v["speedup"] = round(base / v["s_per_step"], 2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
