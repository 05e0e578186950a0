"""Tokens and seconds per training epoch: per-action records vs trajectory chains, on the same trainable actions.

Two data sets, each read the way training reads it (``harnessfit.train.data.load_split``, layout records / chains):

- the **shared-traces build**: ``../shared/traces`` built and audited with the embedded tokenizer. The audit is
  timed too, and so are the cores of the per-record audit (every record rendered and tokenized on its own,
  ``render_many``) and of the chain audit (``chain_run``: each chain tokenized once), CPU seconds in the same run;
- a **synthetic set shaped like V5**: 1,118 trajectories, ~3.5 actions each, record lengths drawn like V5's (median
  4,868, p95 8,519, max 12,195), random token ids; each trajectory's records nested in one chain, ~15% of each
  record supervised.

Training time: rows of each layout, drawn in a fixed shuffled order until ``--budget-tokens`` per layout, are
trained one row per optimizer step (LoRA r 16 on every linear projection, the harnessfit collator and loss) after one
warm-up row; the seconds per token measured there times the tokens per epoch gives seconds per epoch (CPU seconds
on CPU, wall seconds on CUDA). The model: the embedded SmolLM2-135M on CPU; on CUDA a Qwen3-0.6B shape (random
weights; throughput does not depend on them), where TRL's stock SFTTrainer (its own collator, records) runs too.

    .venv/bin/python bench/train_tokens.py                    # both sets, audit comparison, CPU timing
    .venv/bin/python bench/train_tokens.py --no-train         # token counts and audit times only
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
V5 = {"trajectories": 1118, "actions_mean": 3.5, "median": 4868, "p95": 8519, "max": 12195, "min": 1393}


def _cpu() -> float:
    return time.process_time()


def v5_chains(out: Path, vocab: int, seed: int = 0) -> Path:
    """A tokenized set (audit format 2) shaped like V5 in ``out/tokenized/train.parquet``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from harnessfit.tokens.output import TOKENIZED_SCHEMA

    rng = random.Random(seed)
    sigma = math.log(V5["p95"] / V5["median"]) / 1.645
    rows = []
    for t in range(V5["trajectories"]):
        n = 1 + min(12, int(rng.expovariate(1 / (V5["actions_mean"] - 1))))  # mean ≈ 3.5
        lengths = sorted(max(V5["min"], min(V5["max"], int(rng.lognormvariate(math.log(V5["median"]), sigma))))
                         for _ in range(n))
        starts, ends, lens, prev = [], [], [], 0
        for L in lengths:
            L = max(L, prev + 2)
            sup = max(1, min(int(0.15 * L), L - prev - 1))
            starts.append(L - sup)
            ends.append(L)
            lens.append(L)
            prev = L
        ids = [rng.randrange(10, vocab) for _ in range(lens[-1])]
        mask = [0] * len(ids)
        for s, e in zip(starts, ends):
            mask[s:e] = [1] * (e - s)
        rows.append({"id": f"t{t:05d}", "input_ids": ids, "assistant_masks": mask, "n_tokens": len(ids),
                     "n_supervised": sum(mask), "source": "synthetic", "group": f"t{t}", "conversation_id": f"t{t}",
                     "action_ids": [f"t{t:05d}-{k}" for k in range(len(lens))], "action_starts": starts,
                     "action_ends": ends, "action_lengths": lens})
    (out / "tokenized").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=TOKENIZED_SCHEMA), out / "tokenized" / "train.parquet")
    return out


def shared_traces_audit(work: Path, compare: bool) -> tuple[Path, dict]:
    """Build ``../shared/traces``, audit it with the embedded tokenizer; with ``compare`` also time the per-record
    audit core against the chain audit core on the same records."""
    from harnessfit.dataset.build import build_dataset
    from harnessfit.dataset.config import config_from_values
    from harnessfit.tokens import audit

    traces = REPO.parent / "shared" / "traces"
    cfg = config_from_values(inputs=[str(traces)], parquet=False)
    build_dataset(cfg, work, out=work / "ds")
    w0, c0 = time.perf_counter(), _cpu()
    report = audit(work / "ds", "embedded", work / "audit", progress=False)
    facts = {"audit_wall_s": round(time.perf_counter() - w0, 2), "audit_cpu_s": round(_cpu() - c0, 2),
             "records": report.records_read, "record_tokens_all": report.total.total_tokens,
             "cap_applied": report.cap_applied, "layouts": report.layouts_total.model_dump(),
             "breaks": {k: f.count for k, f in report.breaks.items()}, "runs": report.runs}
    if compare:
        facts["audit_core"] = _audit_cores(work / "ds")
    return work / "audit", facts


def _audit_cores(ds: Path) -> dict:
    from harnessfit.core import jsonio
    from harnessfit.core.records import SFTRecord
    from harnessfit.models import load_tokenizer, stop_token_ids
    from harnessfit.tokens.chains import chain_run, split_runs
    from harnessfit.tokens.render import render_many

    tok = load_tokenizer("embedded")
    eot = set(stop_token_ids(tok))

    def records():
        for f in sorted((ds / "sft").glob("*.jsonl")):
            for row in jsonio.read_jsonl(f):
                yield SFTRecord.model_validate(row)

    c0, w0, batch, n_rec = _cpu(), time.perf_counter(), [], 0
    for rec in records():  # the per-record audit: batches of 64 records (or 8 MiB of lines) rendered + tokenized
        batch.append(rec)
        if len(batch) >= 64:
            n_rec += len(render_many(tok, batch, eot=eot))
            batch = []
    n_rec += len(render_many(tok, batch, eot=eot)) if batch else 0
    per_record = {"cpu_s": round(_cpu() - c0, 2), "wall_s": round(time.perf_counter() - w0, 2), "records": n_rec}
    c0, w0, n_runs = _cpu(), time.perf_counter(), 0
    for run, _ in split_runs(records()):
        chain_run(tok, run, eot=eot)
        n_runs += 1
    chains = {"cpu_s": round(_cpu() - c0, 2), "wall_s": round(time.perf_counter() - w0, 2), "runs": n_runs}
    return {"per_record": per_record, "chains": chains,
            "chains_over_per_record_cpu": round(chains["cpu_s"] / per_record["cpu_s"], 3)}


def token_counts(audit_dir: Path, split: str = "train") -> dict:
    from harnessfit.train.data import load_split

    out = {}
    for layout in ("records", "chains"):
        s = load_split(audit_dir, split, layout=layout)
        out[layout] = {"rows": len(s.ids), "actions": s.n_actions, "tokens_per_epoch": s.n_tokens,
                       "supervised_tokens_per_epoch": s.n_supervised}
    out["chains_over_records_tokens"] = round(out["chains"]["tokens_per_epoch"] / out["records"]["tokens_per_epoch"], 4)
    return out


def _model(device: str):
    if device == "cpu":
        from harnessfit.models import load_model

        return load_model("embedded", dtype=torch.float32)
    from transformers import AutoModelForCausalLM, Qwen3Config

    cfg = Qwen3Config(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                      num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=True,
                      max_position_embeddings=40960)
    with torch.device("cuda"):
        return AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")


def _tokenizer(vocab: int):
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="t0", eos_token="t1")


def time_training(audit_dir: Path, layout: str, device: str, budget: int, stock: bool = False) -> dict:
    """Seconds per token over rows of ``layout`` up to ``budget`` tokens, one row per optimizer step, after one
    warm-up row. ``stock``: TRL's SFTTrainer with its own collator and loss (records only)."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback
    from trl import SFTConfig, SFTTrainer

    from harnessfit.train.data import load_split
    from harnessfit.train.loss import ActionCollator, ActionWeightedSFTTrainer

    split = load_split(audit_dir, "train", layout=layout)
    order = list(range(len(split.ids)))
    random.Random(1).shuffle(order)
    pick, total = [], 0
    for i in order:
        pick.append(i)
        total += split.lengths[i] if len(pick) > 1 else 0  # the first row is the warm-up
        if total >= budget and len(pick) > 1:
            break
    ds = split.dataset.select(pick)
    model = _model(device)
    vocab = model.config.vocab_size
    args = SFTConfig(output_dir=tempfile.mkdtemp(prefix=f"bench_tt_{layout}_"), max_steps=len(pick),
                     per_device_train_batch_size=1, gradient_accumulation_steps=1, learning_rate=1e-4,
                     bf16=device == "cuda", use_cpu=device == "cpu", gradient_checkpointing=False, max_length=None,
                     logging_steps=1, report_to="none", save_strategy="no", dataloader_num_workers=0, seed=42,
                     disable_tqdm=True, remove_unused_columns=False, shuffle_dataset=False)
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM", target_modules="all-linear")
    if stock:
        ds = Dataset.from_dict({"input_ids": ds["input_ids"], "labels": ds["labels"]})
        trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=_tokenizer(vocab),
                             peft_config=lora)
    else:
        coll = ActionCollator(pad_token_id=0, padding_free=True, weighting="per_action")
        trainer = ActionWeightedSFTTrainer(model=model, args=args, train_dataset=ds, processing_class=_tokenizer(vocab),
                                           peft_config=lora, data_collator=coll)
    trainer.remove_callback(PrinterCallback)
    marks: list[tuple[float, float, int]] = []

    class Clock(TrainerCallback):
        """Wall, CPU and tokens trained (TRL's own count) at the end of every step; the first step is warm-up."""

        def on_step_end(self, args, state, control, **kwargs):
            if device == "cuda":
                torch.cuda.synchronize()
            marks.append((time.perf_counter(), _cpu(), trainer._total_train_tokens))

    trainer.add_callback(Clock())
    trainer.train()
    tokens = marks[-1][2] - marks[0][2]
    wall, cpu = marks[-1][0] - marks[0][0], marks[-1][1] - marks[0][1]
    return {"layout": layout, "trainer": "trl_stock" if stock else "harnessfit", "timed_rows": len(pick) - 1,
            "timed_tokens": tokens, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "tokens_per_s": round(tokens / wall, 1), "cpu_s_per_token": cpu / tokens, "wall_s_per_token": wall / tokens}


def per_epoch(counts: dict, timing: dict, device: str) -> dict:
    n = counts[timing["layout"]]["tokens_per_epoch"]
    key = "cpu_s" if device == "cpu" else "wall_s"
    return {**{k: v for k, v in timing.items() if not k.endswith("_per_token")},
            f"{key}_per_epoch": round(n * timing[f"{key}_per_token"], 1), "tokens_per_epoch": n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--budget-tokens", type=int, default=12000, help="tokens timed per layout and data set")
    ap.add_argument("--no-train", action="store_true", help="token counts and audit times only")
    ap.add_argument("--no-audit-compare", action="store_true", help="skip timing the per-record audit core")
    ap.add_argument("--sets", nargs="+", default=["shared_traces", "synthetic_v5"],
                    choices=["shared_traces", "synthetic_v5"], help="data sets to measure")
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    device = a.device if a.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if a.threads:
        torch.set_num_threads(a.threads)
    out: dict = {"bench": "train_tokens", "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
                 "threads": torch.get_num_threads(), "datasets": {}}
    with tempfile.TemporaryDirectory(prefix="bench_train_tokens_") as tmp:
        work = Path(tmp)
        sets = []
        if "shared_traces" in a.sets:
            sets.append(("shared_traces", *shared_traces_audit(work / "shared", compare=not a.no_audit_compare)))
        if "synthetic_v5" in a.sets:
            sets.append(("synthetic_v5", v5_chains(work / "v5", 49152 if device == "cpu" else 151936), {"shape": V5}))
        for name, audit_dir, extra in sets:
            counts = token_counts(audit_dir)
            entry = {**extra, "tokens": counts}
            if not a.no_train:
                runs = []
                for layout in ("records", "chains"):
                    runs.append(per_epoch(counts, time_training(audit_dir, layout, device, a.budget_tokens), device))
                    print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
                if device == "cuda":
                    runs.append(per_epoch(counts, time_training(audit_dir, "records", device, a.budget_tokens,
                                                                stock=True), device))
                key = "cpu_s_per_epoch" if device == "cpu" else "wall_s_per_epoch"
                entry["train"] = runs
                entry["chains_over_records_seconds_per_epoch"] = round(runs[1][key] / runs[0][key], 3)
            out["datasets"][name] = entry
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
