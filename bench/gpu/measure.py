"""One GPU run: harnessfit's SFT path (chains vs records, bf16 LoRA and 4-bit QLoRA) and a GRPO step, each beside
TRL's stock trainer on the same data in the same run.

Run by ``bench/gpu/run.sh`` (which installs the carried wheels first). Every variant runs in its own process (a clean
peak-memory reading, and a variant that hangs or fails loses only itself) under a time limit, in priority order
while the run's time budget lasts; ``$OUT/gpu.json`` is rewritten after each one, so a run cut short still returns
what it measured.

What is measured (random-initialised models of real shapes: throughput and memory do not depend on weight values):

- ``sft``: ``harnessfit.train.train_sft`` — the real path: the audit's token ids, the fast-path plan (flex attention,
  padding-free packing, checkpointing decided from the memory estimate, Liger when installed), harnessfit's
  per-action loss — with ``layout`` chains or records; ``trl_stock``: TRL's ``SFTTrainer`` with its defaults
  (gradient checkpointing on, SDPA, batch 1 x 8, completion-only loss from the same masks) on the same records.
  The first optimizer step is warm-up; tokens/s counts the timed steps' input tokens (TRL's count). Seconds per
  epoch = an epoch's tokens in that layout / tokens/s, so chains vs records compares the same actions.
- ``qlora``: the Qwen3-8B shape loaded in 4-bit NF4 (bitsandbytes), one record of 20,480 tokens: peak memory and
  tokens/s, harnessfit vs stock.
- ``grpo``: ``harnessfit.train.train_grpo`` with the published recipe's group (8) and completion length (640),
  transformers generation, on the build's decision points; beside TRL's stock ``GRPOTrainer`` on the same prompts.

    python bench/gpu/measure.py --audit DIR --dataset DIR --out OUT [--shapes tiny] [--budget-s 480]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL_DIR = Path("/tmp/hfbench/model")  # the path the audit names (the audit was made against this folder)
QLORA_TOKENS = 20480


# ---------------------------------------------------------------- one variant (runs in its own process)

def _clock():
    """A TrainerCallback noting wall time and tokens seen at the end of every optimizer step."""
    import torch
    from transformers import TrainerCallback

    class StepClock(TrainerCallback):
        def __init__(self) -> None:
            self.marks: list[tuple[float, int]] = []

        def on_step_end(self, args, state, control, **kwargs):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.marks.append((time.perf_counter(), int(state.num_input_tokens_seen or 0)))

    return StepClock()


def _timed(clock) -> dict:
    if len(clock.marks) < 2:
        return {"error": f"only {len(clock.marks)} optimizer step(s) ran: nothing timed after the warm-up"}
    (t0, n0), (t1, n1) = clock.marks[0], clock.marks[-1]
    secs = t1 - t0
    return {"timed_steps": len(clock.marks) - 1, "timed_tokens": n1 - n0, "seconds": round(secs, 3),
            "tokens_per_s": round((n1 - n0) / secs, 1) if secs > 0 else None,
            "step_seconds": [round(b[0] - a[0], 3) for a, b in zip(clock.marks, clock.marks[1:])]}


def _peak() -> dict:
    import resource

    import torch

    if torch.cuda.is_available():
        return {"peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2), "peak_kind": "cuda max allocated",
                "peak_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 2)}
    return {"peak_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
            "peak_kind": "process peak RSS"}


def _epoch(audit: Path, layout: str) -> dict:
    from harnessfit.train.data import load_split

    s = load_split(audit, "train", layout=layout)
    return {"rows_per_epoch": len(s.ids), "actions_per_epoch": s.n_actions, "tokens_per_epoch": s.n_tokens,
            "supervised_tokens_per_epoch": s.n_supervised}


def sft_harnessfit(v: dict) -> dict:
    from harnessfit.train import train_sft
    from harnessfit.train.config import load_sft_config

    cpu = v["device"] == "cpu"
    cfg = load_sft_config(None, audit_dir=v["audit"], model=str(MODEL_DIR), layout=v["layout"],
                          quantization=v.get("quantization", "none"), max_steps=v["steps"] + 1,
                          eval_strategy="no", eval_on_start=False, save_strategy="no", logging_steps=1,
                          report_to="none", include_num_input_tokens_seen=True, use_cpu=cpu,
                          gradient_accumulation_steps=v.get("grad_accum", 8), seed=42,
                          **({"bf16": False} if cpu else {}))
    clock = _clock()
    out = Path(tempfile.mkdtemp(prefix="hfbench_sft_"))
    res = train_sft(cfg, out / "run", extra_callbacks=[clock])
    return {**_timed(clock), **_peak(), "status": res.status, "plan": _fast_path(out / "run" / "train_report.md"),
            **_epoch(Path(v["audit"]), v["layout"])}


def _fast_path(report: Path) -> dict:
    """The switches the run resolved, read from its train_report.md ('Fast path and precision' table and notes)."""
    plan: dict = {"notes": []}
    if not report.is_file():
        return plan
    section = report.read_text().split("## Fast path and precision", 1)[-1].split("\n## ", 1)[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 2 and cells[0] not in ("switch", "---"):
            plan[cells[0]] = cells[1]
        elif line.startswith("- "):
            plan["notes"].append(line[2:])
    return plan


def sft_stock(v: dict) -> dict:
    """TRL's SFTTrainer as a user would set it up: its defaults, the same records, completion-only loss."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from harnessfit.train.data import load_split

    cpu = v["device"] == "cpu"
    split = load_split(Path(v["audit"]), "train", layout="records")
    per_step = v.get("grad_accum", 8)
    n = (v["steps"] + 1) * per_step
    rows = split.dataset.select(range(min(n, len(split.ids))))
    ds = Dataset.from_dict({"input_ids": rows["input_ids"],
                            "completion_mask": [[int(x != -100) for x in lab] for lab in rows["labels"]]})
    kwargs: dict = {"dtype": torch.float32 if cpu else torch.bfloat16, "attn_implementation": "sdpa"}
    if v.get("quantization") == "nf4":
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                           bnb_4bit_use_double_quant=True,
                                                           bnb_4bit_compute_dtype=torch.bfloat16)
        if torch.cuda.is_available():
            kwargs["device_map"] = {"": 0}
    model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, **kwargs)
    args = SFTConfig(output_dir=tempfile.mkdtemp(prefix="hfbench_stock_"), max_steps=v["steps"] + 1,
                     per_device_train_batch_size=1, gradient_accumulation_steps=per_step, learning_rate=1e-4,
                     bf16=not cpu, use_cpu=cpu, max_length=None, logging_steps=1, report_to="none",
                     save_strategy="no", seed=42, disable_tqdm=True, include_num_input_tokens_seen=True)
    lora = LoraConfig(r=32, lora_alpha=64, lora_dropout=0.05, task_type="CAUSAL_LM", target_modules="all-linear")
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds,
                         processing_class=AutoTokenizer.from_pretrained(Path(v["audit"]) / "tokenizer"),
                         peft_config=lora)
    clock = _clock()
    trainer.add_callback(clock)
    trainer.train()
    return {**_timed(clock), **_peak(), "plan": {"gradient_checkpointing": args.gradient_checkpointing,
                                                 "attn_implementation": "sdpa", "padding_free": False,
                                                 "per_device_train_batch_size": 1,
                                                 "gradient_accumulation_steps": per_step},
            **_epoch(Path(v["audit"]), "records")}


def grpo_harnessfit(v: dict) -> dict:
    from harnessfit.train.config import load_grpo_config
    from harnessfit.train.grpo import train_grpo

    cpu = v["device"] == "cpu"
    g, L = v["group"], v["completion"]
    cfg = load_grpo_config(None, audit_dir=v["audit"], dataset_dir=v["dataset"], model=str(MODEL_DIR),
                           num_generations=g, per_device_train_batch_size=g, gradient_accumulation_steps=1,
                           max_completion_length=L, max_prompt_length=v["max_prompt"], temperature=1.0, beta=0.01,
                           loss_type="dapo", scale_rewards="group", mask_truncated_completions=True,
                           learning_rate=4e-6, max_steps=v["steps"] + 1, save_strategy="no", logging_steps=1,
                           report_to="none", heldout=False, use_vllm=False, lora_r=64, lora_alpha=128,
                           lora_dropout=0.1, lora_target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
                           rewards={"format": 1.0, "schema_valid": 1.0, "reference_match": 1.0},
                           include_num_input_tokens_seen=True, use_cpu=cpu, **({"bf16": False} if cpu else {}))
    clock = _clock()
    out = Path(tempfile.mkdtemp(prefix="hfbench_grpo_"))
    train_grpo(cfg, out / "run", extra_callbacks=[clock])
    t = _timed(clock)
    t["completion_tokens_per_step"] = g * L
    return {**t, **_peak()}


def grpo_stock(v: dict) -> dict:
    """TRL's GRPOTrainer with its defaults for what the recipe leaves open, the same prompts and group, one
    verifiable reward (the completion parses as a tool call) so the step does the same work."""
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from harnessfit.train.grpo_data import load_decision_points

    cpu = v["device"] == "cpu"
    g, L = v["group"], v["completion"]
    tok = AutoTokenizer.from_pretrained(Path(v["audit"]) / "tokenizer")
    points = load_decision_points(Path(v["dataset"]), "train", tok, max_prompt_length=v["max_prompt"])
    model = AutoModelForCausalLM.from_pretrained(MODEL_DIR, dtype=torch.float32 if cpu else torch.bfloat16)

    def parses(completions, **_):
        return [1.0 if "<tool_call>" in (c if isinstance(c, str) else str(c)) else 0.0 for c in completions]

    args = GRPOConfig(output_dir=tempfile.mkdtemp(prefix="hfbench_grpo_stock_"), num_generations=g,
                      per_device_train_batch_size=g, gradient_accumulation_steps=1, max_completion_length=L,
                      max_steps=v["steps"] + 1, learning_rate=4e-6, beta=0.01, loss_type="dapo", bf16=not cpu,
                      use_cpu=cpu, logging_steps=1, report_to="none", save_strategy="no", disable_tqdm=True,
                      include_num_input_tokens_seen=True)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    lora = LoraConfig(r=64, lora_alpha=128, lora_dropout=0.1, task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
    trainer = GRPOTrainer(model=model, reward_funcs=[parses], args=args, train_dataset=points.dataset(),
                          processing_class=tok, peft_config=lora)
    clock = _clock()
    trainer.add_callback(clock)
    trainer.train()
    t = _timed(clock)
    t["completion_tokens_per_step"] = g * L
    return {**t, **_peak()}


RUNNERS = {"sft_harnessfit": sft_harnessfit, "sft_stock": sft_stock, "grpo_harnessfit": grpo_harnessfit,
           "grpo_stock": grpo_stock}


def run_one(spec: str, result_path: Path) -> None:
    v = json.loads(spec)
    import torch

    if v["device"] == "cpu":
        torch.set_num_threads(2)
    t0 = time.perf_counter()
    try:
        res = RUNNERS[v["runner"]](v)
    except Exception as exc:  # noqa: BLE001 - the orchestrator records the failure beside the other variants
        import traceback

        traceback.print_exc()
        res = {"error": f"{type(exc).__name__}: {str(exc)[:600]}"}
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    result_path.write_text(json.dumps(res))


# ---------------------------------------------------------------- the orchestrator

def qlora_audit(src: Path, out: Path, tokens: int) -> Path:
    """A copy of ``src``'s audit whose train split is one synthetic record of ``tokens`` tokens (last 15 percent
    supervised): the long-record memory case. The meta and tokenizer are the audit's, so training accepts it."""
    import random
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from harnessfit.tokens.output import TOKENIZED_SCHEMA

    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(src, out, ignore=shutil.ignore_patterns("*.parquet"))
    rng = random.Random(0)
    sup = int(tokens * 0.15)
    ids = [rng.randrange(10, 49152) for _ in range(tokens)]
    row = {"id": "long-0", "input_ids": ids, "assistant_masks": [0] * (tokens - sup) + [1] * sup,
           "n_tokens": tokens, "n_supervised": sup, "source": "synthetic", "group": "long", "conversation_id": "long",
           "action_ids": ["long-0-0"], "action_starts": [tokens - sup], "action_ends": [tokens],
           "action_lengths": [tokens]}
    pq.write_table(pa.Table.from_pylist([row] * 2, schema=TOKENIZED_SCHEMA), out / "tokenized" / "train.parquet")
    return out


def plan(a: argparse.Namespace, device: str, qaudit: Path) -> list[dict]:
    """The variants in priority order (the budget may end the list early): the small shape's three SFT variants and
    the GRPO pair on the same model folder, then the big shape's chains and stock, QLoRA, and last the big shape's
    records (the chains-vs-records ratio is measured on the small shape first)."""
    small, big = a.shapes
    base = {"device": device, "audit": str(a.audit), "steps": a.steps}

    def sft(shape, runner, layout, scale=1):
        return {**base, "kind": "sft_bf16", "shape": shape, "runner": runner, "layout": layout,
                "limit_s": a.limit_s * scale}

    vs = [sft(small, "sft_harnessfit", "chains"), sft(small, "sft_harnessfit", "records"),
          sft(small, "sft_stock", "records")]
    vs += [{**base, "kind": "grpo", "shape": small, "runner": runner, "dataset": str(a.dataset), "group": a.group,
            "completion": a.completion, "max_prompt": a.max_prompt, "steps": 1, "limit_s": a.limit_s * 1.5}
           for runner in ("grpo_harnessfit", "grpo_stock")]
    vs += [sft(big, "sft_harnessfit", "chains", 1.5), sft(big, "sft_stock", "records", 1.5)]
    if a.qlora:
        vs += [{**base, "kind": "qlora", "shape": big, "runner": runner, "layout": "records", "audit": str(qaudit),
                "quantization": "nf4", "grad_accum": 1, "steps": 1, "limit_s": a.limit_s * 1.5}
               for runner in ("sft_harnessfit", "sft_stock")]
    vs.append(sft(big, "sft_harnessfit", "records", 1.5))
    return [v for v in vs if not a.kinds or v["kind"] in a.kinds]


def write_model(shape: str, tokenizer: Path, log) -> dict:
    cmd = [sys.executable, str(HERE / "model_folder.py"), "--shape", shape, "--tokenizer", str(tokenizer),
           "--out", str(MODEL_DIR), "--weights"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    log.write(p.stdout + p.stderr)
    return {"shape": shape, "rc": p.returncode, "out": p.stdout.strip()[-300:]}


def environment(device: str) -> dict:
    import importlib.metadata as md

    import torch

    env = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "python": sys.version.split()[0]}
    for pkg in ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "bitsandbytes", "liger-kernel",
                "pyarrow"):
        try:
            env[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            env[pkg] = None
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env["gpu_memory_gib"] = round(props.total_memory / 2**30, 1)
        env["multiprocessors"] = props.multi_processor_count
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--audit", type=Path, required=True, help="audit dir made against /tmp/hfbench/model")
    ap.add_argument("--dataset", type=Path, required=True, help="the build the audit read (decision points)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shapes", nargs=2, default=["qwen3-0.6b", "qwen3-8b"], help="small and big shape")
    ap.add_argument("--kinds", nargs="*", help="only these kinds (sft_bf16, grpo, qlora): dry runs")
    ap.add_argument("--steps", type=int, default=1, help="timed optimizer steps per SFT variant (after a warm-up)")
    ap.add_argument("--budget-s", type=float, default=480, help="start no variant after this many seconds")
    ap.add_argument("--limit-s", type=float, default=100,
                    help="per-variant limit in seconds (x1.5 for the big shape, QLoRA and GRPO)")
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--completion", type=int, default=640)
    ap.add_argument("--max-prompt", type=int, default=6144)
    ap.add_argument("--no-qlora", dest="qlora", action="store_false")
    ap.add_argument("--qlora-tokens", type=int, default=QLORA_TOKENS)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        run_one(a.one, a.result)
        return
    import torch

    t_start = time.perf_counter()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a.out.mkdir(parents=True, exist_ok=True)
    report: dict = {"bench": "gpu", "date": time.strftime("%Y-%m-%d"), "environment": environment(device),
                    "audit": json.loads((a.audit / "audit.json").read_text()).get("totals")
                    if (a.audit / "audit.json").is_file() else None, "models": [], "variants": []}
    from harnessfit.models import ensure_embedded  # noqa: F401 - fails early where harnessfit does not import

    qaudit = qlora_audit(a.audit, Path(tempfile.mkdtemp(prefix="hfbench_qaudit_")) / "audit", a.qlora_tokens)
    if a.qlora:
        try:
            import bitsandbytes  # noqa: F401
        except Exception as exc:  # noqa: BLE001
            a.qlora = False
            report["qlora_skipped"] = f"bitsandbytes does not import: {exc}"[:300]
    log = open(a.out / "variants.log", "a")
    current = None
    for v in plan(a, device, qaudit):
        left = a.budget_s - (time.perf_counter() - t_start)
        if left < 30:
            report["variants"].append({**{k: v[k] for k in ("kind", "shape", "runner", "layout")},
                                       "skipped": "the run's time budget was spent"})
            continue
        if v["shape"] != current:
            report["models"].append(write_model(v["shape"], a.audit / "tokenizer", log))
            current = v["shape"]
        res_path = a.out / "one.json"
        res_path.unlink(missing_ok=True)
        limit = min(v["limit_s"], left)
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, __file__, "--audit", str(a.audit), "--dataset", str(a.dataset),
                                "--out", str(a.out), "--one", json.dumps(v), "--result", str(res_path)],
                               stdout=log, stderr=subprocess.STDOUT, timeout=limit)
            res = json.loads(res_path.read_text()) if res_path.is_file() else {"error": f"exit {p.returncode}"}
        except subprocess.TimeoutExpired:
            res = {"error": f"stopped at its {limit:.0f} s limit"}
        log.flush()
        row = {**{k: v[k] for k in v if k not in ("audit", "dataset", "device")}, **res,
               "process_s": round(time.perf_counter() - t0, 1)}
        report["variants"].append(row)
        print(json.dumps(row), flush=True)
        report["summary"] = summarise(report["variants"])
        report["total_s"] = round(time.perf_counter() - t_start, 1)
        (a.out / "gpu.json").write_text(json.dumps(report, indent=1))
    res_path = a.out / "one.json"
    res_path.unlink(missing_ok=True)
    print(json.dumps(report.get("summary"), indent=1))


def summarise(rows: list[dict]) -> dict:
    """Per shape: chains vs records (seconds per epoch), harnessfit vs stock (tokens/s), peaks; QLoRA; GRPO."""
    def get(kind, shape, runner, layout=None):
        for r in rows:
            if (r.get("kind"), r.get("shape"), r.get("runner")) == (kind, shape, runner) and \
                    (layout is None or r.get("layout") == layout) and r.get("tokens_per_s"):
                return r
        return None

    out: dict = {}
    for shape in sorted({r["shape"] for r in rows if r.get("kind") == "sft_bf16"}):
        ch, rec = get("sft_bf16", shape, "sft_harnessfit", "chains"), get("sft_bf16", shape, "sft_harnessfit", "records")
        st = get("sft_bf16", shape, "sft_stock")
        s: dict = {}
        if ch and rec:
            s["epoch_s_chains"] = round(ch["tokens_per_epoch"] / ch["tokens_per_s"], 1)
            s["epoch_s_records"] = round(rec["tokens_per_epoch"] / rec["tokens_per_s"], 1)
            s["chains_speedup_per_epoch"] = round(s["epoch_s_records"] / s["epoch_s_chains"], 2)
        if rec and st:
            s["records_tokens_per_s_vs_stock"] = round(rec["tokens_per_s"] / st["tokens_per_s"], 2)
        if st:
            s["epoch_s_stock"] = round(st["tokens_per_epoch"] / st["tokens_per_s"], 1)
            if ch:
                s["chains_epoch_speedup_vs_stock"] = round(s["epoch_s_stock"] / s["epoch_s_chains"], 2)
        for name, r in (("chains", ch), ("records", rec), ("stock", st)):
            if r:
                s[f"{name}_tokens_per_s"], s[f"{name}_peak_gib"] = r["tokens_per_s"], r.get("peak_gib")
        out[shape] = s
    for runner in ("sft_harnessfit", "sft_stock"):
        r = next((r for r in rows if r.get("kind") == "qlora" and r.get("runner") == runner and "peak_gib" in r), None)
        if r:
            out.setdefault("qlora", {})[runner] = {"peak_gib": r["peak_gib"], "tokens_per_s": r.get("tokens_per_s")}
    for runner in ("grpo_harnessfit", "grpo_stock"):
        r = next((r for r in rows if r.get("runner") == runner and r.get("seconds")), None)
        if r:
            out.setdefault("grpo", {})[runner] = {"step_s": r["seconds"] / max(1, r["timed_steps"]),
                                                  "peak_gib": r.get("peak_gib")}
    return out


if __name__ == "__main__":
    main()
