"""Write a model folder of a real shape with random weights: a Qwen3 config, the embedded model's tokenizer files.

Throughput and memory do not depend on weight values, and no weights can be downloaded, so the GPU benchmark trains
random-initialised models of the Qwen3-0.6B and Qwen3-8B shapes. The folder carries the embedded SmolLM2 tokenizer
(49,152 ids, all below Qwen3's 151,936) so that `harnessfit audit --model FOLDER` and `harnessfit train sft` run
their real paths against it; every shape is written to the same path, so one audit serves both.

    python bench/gpu/model_folder.py --shape qwen3-0.6b --tokenizer DIR --out /tmp/hfbench/model [--weights]
Without --weights only config and tokenizer are written (what the audit needs, on CPU).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shapes the CPU bench already defines
from train_throughput import SHAPES as _BENCH_SHAPES  # noqa: E402

# the real shapes as bench/train_throughput.py has them; "tiny" here keeps the embedded tokenizer's 49,152 ids
SHAPES = {**_BENCH_SHAPES, "tiny": {**_BENCH_SHAPES["tiny"], "vocab_size": 49152}}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json")


def write_folder(shape: str, tokenizer_dir: Path, out: Path, weights: bool) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    t0 = time.perf_counter()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    cfg = Qwen3Config(**SHAPES[shape], max_position_embeddings=40960, rope_theta=1e6, bos_token_id=1,
                      eos_token_id=2, pad_token_id=2)
    for name in TOKENIZER_FILES:
        if (tokenizer_dir / name).is_file():
            shutil.copy(tokenizer_dir / name, out / name)
    if weights:
        torch.manual_seed(0)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        model.save_pretrained(out)
        n = sum(p.numel() for p in model.parameters())
        del model
        if device == "cuda":
            torch.cuda.empty_cache()
    else:
        cfg.save_pretrained(out)
        n = None
    return {"shape": shape, "parameters": n, "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", required=True, choices=sorted(SHAPES))
    ap.add_argument("--tokenizer", type=Path, required=True, help="folder holding tokenizer.json etc.")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--weights", action="store_true", help="also write random bf16 weights (safetensors)")
    a = ap.parse_args()
    print(write_folder(a.shape, a.tokenizer, a.out, a.weights))


if __name__ == "__main__":
    main()
