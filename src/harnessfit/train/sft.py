"""``train_sft``: LoRA/QLoRA SFT on the audited tokenized set with TRL's SFTTrainer + PEFT.

One function owns the run folder:
```
OUT/checkpoints/checkpoint-N/   resumable (optimizer, scheduler, RNG, data position)
OUT/adapter/                    final adapter (safetensors) + harnessfit_adapter.json (base id + revision pinned)
OUT/metrics.jsonl  OUT/guard.jsonl  OUT/tensorboard/  OUT/skipped.jsonl  OUT/recipe.json  OUT/result.json
OUT/train_report.md  OUT/plots/*.png
```
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Literal

import orjson
import torch
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from transformers import TrainerCallback

from harnessfit.errors import UserError
from harnessfit.core.jsonio import read_jsonl, write_jsonl
from harnessfit.train.data import TokenizedSplit, find_eval_splits, load_meta, load_split
from harnessfit.train.fastpath import FastPath, plan_fast_path
from harnessfit.train.guard import HealthGuard, ReadingSource
from harnessfit.train.recipe import RecipeSFTConfig, TrainRecipe

__all__ = ["TrainResult", "train_sft", "newest_checkpoint", "model_fingerprint", "STOPPED_EXIT_CODE"]

STOPPED_EXIT_CODE = 3
ADAPTER_META = "harnessfit_adapter.json"


class TrainResult(BaseModel):
    """What a run produced and how it ended (``status`` 'stopped' = the health guard stopped it)."""

    status: Literal["completed", "stopped"]
    out_dir: Path
    adapter_dir: Path | None
    report_path: Path | None
    metrics_path: Path
    guard_path: Path | None
    checkpoint_dir: Path | None
    global_step: int
    initial_val_loss: float | None
    final_val_loss: float | None
    best_val_loss: float | None
    best_step: int | None
    stop_reason: str | None = None
    resumed_from: Path | None = None
    harness: str | None = None  # the target harness (pi@VERSION) of the audited set, as recorded in the adapter
    data: dict | None = None  # what was trained on and how much of it was seen (see ``_data_facts``)


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


def _world() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def newest_checkpoint(ckpt_dir: Path) -> Path | None:
    """The newest *complete* checkpoint (``trainer_state.json`` is written last, so a folder cut by ``kill -9``
    mid-save lacks it and is skipped)."""
    if not ckpt_dir.is_dir():
        return None
    done = [p for p in ckpt_dir.glob("checkpoint-*") if (p / "trainer_state.json").is_file()
            and p.name.split("-")[-1].isdigit()]
    return max(done, key=lambda p: int(p.name.split("-")[-1]), default=None)


def model_fingerprint(path: Path) -> str:
    """A cheap content pin for a local model folder: SHA-256 of config.json plus each weight file's name and size."""
    import hashlib

    h = hashlib.sha256()
    cfg = path / "config.json"
    if cfg.is_file():
        h.update(cfg.read_bytes())
    for f in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")) + sorted(path.glob("*.gguf")):
        h.update(f"{f.name}:{f.stat().st_size}\n".encode())
    return "sha256:" + h.hexdigest()


def _check_matches_audit(meta: dict, audit_dir: Path, spec: str, resolved: Path | str, tokenizer) -> None:
    """Training must use the base model and the template the audit tokenized with; say which differs and the fix."""
    from harnessfit.models import model_revision, template_info

    for key in ("resolved", "template_sha256"):
        if key not in meta:
            raise UserError(f"{audit_dir}/tokenized/meta.json lacks {key!r}: it was not written by this version of "
                            "`harnessfit audit`; re-run the audit")
    audited, pinned = meta["resolved"], meta.get("revision")
    now = model_revision(resolved)
    same = (now == pinned) if pinned else (str(resolved) == str(audited))
    if not same:
        what = f"revision {pinned[:12]}…, found {(now or 'none')[:12]}" if pinned else f"{audited}"
        raise UserError(f"base model {spec!r} ({resolved}) is not the one the audit at {audit_dir} tokenized with "
                        f"({what}): set model: {meta.get('model') or audited} in the recipe, or re-run "
                        f"`harnessfit audit DATASET --model {spec}`")
    sha = template_info(tokenizer).sha256
    if sha != meta["template_sha256"]:
        raise UserError(f"the chat template in {audit_dir}/tokenizer (sha256 {sha[:12]}…) differs from the one the "
                        f"audit recorded ({str(meta['template_sha256'])[:12]}…): the tokenizer folder was changed "
                        "after the audit; re-run `harnessfit audit` so masks and template agree")


def _audit_harness(meta: dict, audit_dir: Path, requested: str | None) -> str:
    """The harness the run trains for: the audit's (``--harness`` must agree with it), else the default."""
    from harnessfit.harness.versions import recorded_harness, stage_harness

    return stage_harness(requested, recorded_harness(meta), what=f"the audit {audit_dir}", stage="train sft",
                         redo="rebuild the dataset and re-run `harnessfit audit`")


def _load_model(spec: str, fp: FastPath):
    """The base model through ``harnessfit.models.load_model`` with the fast path's dtype, attention and NF4 placement
    (this process's GPU under accelerate), then Liger kernels when the fast path asks for them."""
    from harnessfit.models import load_model

    device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}" if fp.device == "cuda" and fp.quantization == "nf4" else "cpu"
    model = load_model(spec, dtype=torch.bfloat16 if fp.dtype == "bf16" else torch.float32,
                       quantization=fp.quantization, device=device, attn_implementation=fp.attn_implementation)
    if fp.liger:
        from liger_kernel.transformers import _apply_liger_kernel_to_instance  # type: ignore

        _apply_liger_kernel_to_instance(model=model, fused_linear_cross_entropy=False)
    return model


class MetricsLog(TrainerCallback):
    """Every log row (train loss, lr, eval loss, eval token accuracy) appended to ``metrics.jsonl`` as it happens."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        row = {"step": state.global_step, "epoch": round(state.epoch or 0.0, 6)}
        row.update({k: (float(v) if isinstance(v, (int, float)) else v) for k, v in logs.items()})
        with self.path.open("ab") as fh:
            fh.write(orjson.dumps(row) + b"\n")


class GuardStop(TrainerCallback):
    """Turns the guard's stop flag into a graceful stop: save a checkpoint at this step, then end training.

    Under several processes the flag is max-reduced so every rank stops at the same step."""

    def __init__(self, guard: HealthGuard | None) -> None:
        self.guard = guard
        self.fired = False

    def _flag(self) -> bool:
        local = bool(self.guard and self.guard.should_stop())
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            dev = "cuda" if torch.cuda.is_available() and torch.distributed.get_backend() == "nccl" else "cpu"
            t = torch.tensor([1.0 if local else 0.0], device=dev)
            torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
            return bool(t.item() > 0)
        return local

    def on_step_end(self, args, state, control, **kwargs):
        if self._flag():
            self.fired = True
            control.should_save = True
            control.should_training_stop = True


class RankTally(TrainerCallback):
    """Counts the micro-batches this process ran (so a multi-process run can show that every rank trained)."""

    def __init__(self) -> None:
        self.micro_batches = 0

    def on_substep_end(self, args, state, control, **kwargs):
        self.micro_batches += 1

    def on_step_end(self, args, state, control, **kwargs):
        self.micro_batches += 1


def _adapter_digest(model) -> str:
    import hashlib

    h = hashlib.sha256()
    for name, p in sorted(model.named_parameters()):
        if p.requires_grad:
            h.update(name.encode())
            h.update(p.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


def _truncate_metrics(path: Path, step: int) -> None:
    """On resume, drop rows logged after the checkpoint (they will be logged again) so the curve stays single."""
    if path.is_file():
        rows = [r for r in read_jsonl(path) if r.get("step", 0) <= step]
        write_jsonl(path, rows)


def _curve_summary(metrics_path: Path) -> dict:
    evals = [r for r in read_jsonl(metrics_path) if "eval_loss" in r] if metrics_path.is_file() else []
    if not evals:
        return {"initial_val_loss": None, "final_val_loss": None, "best_val_loss": None, "best_step": None}
    best = min(evals, key=lambda r: (r["eval_loss"], r["step"]))
    return {"initial_val_loss": evals[0]["eval_loss"], "final_val_loss": evals[-1]["eval_loss"],
            "best_val_loss": best["eval_loss"], "best_step": best["step"]}


def _held_out(audit_dir: Path, recipe: TrainRecipe) -> tuple[TokenizedSplit | None, str | None, list]:
    """The held-out split to evaluate on: the first candidate (``eval_split``, or with 'auto' every conventional name
    present) that has trainable actions. A candidate with none is said plainly and the next one is tried; with none
    left the run trains without a held-out loss instead of stopping. Returns (split, note for the log, skipped)."""
    notes: list[str] = []
    skipped: list = []
    names = find_eval_splits(audit_dir, recipe.eval_split)
    for name in names:
        if name == recipe.train_split:
            continue
        split = load_split(audit_dir, name, layout=recipe.layout, max_records=recipe.max_eval_records,
                           max_length=recipe.max_length, sources=recipe.sources)
        skipped += split.skipped
        if not split.empty:
            note = (f"{'; '.join(notes)}; evaluating on split {name!r} instead" if notes else None)
            return split, note, skipped
        notes.append(split.why_empty())
    if not notes:
        return None, "no held-out split in the audit: training without a held-out loss", skipped
    return None, f"{'; '.join(notes)}: training without a held-out loss", skipped


def _data_facts(recipe: TrainRecipe, train: TokenizedSplit, evalset: TokenizedSplit | None, eval_note: str | None,
                trainer, seconds: float | None) -> dict:
    """What training read and what it saw: tokens per epoch, actions, and how many actions the run's micro-batches
    held at least once (counted from the rows each training micro-batch carried, in this process)."""
    seen_rows = trainer.rows_seen
    seen_actions = sum(len(train.action_ids[r]) for r in seen_rows if r < len(train.action_ids))
    sup = trainer.supervised_seen
    return {
        "layout": recipe.layout, "loss_weighting": recipe.loss_weighting,
        "train_split": train.name, "train_rows": len(train.ids), "train_actions": train.n_actions,
        "tokens_per_epoch": train.n_tokens, "supervised_tokens_per_epoch": train.n_supervised,
        "train_skipped": len(train.skipped), "train_skipped_by_reason": train.skipped_by_reason(),
        "eval_split": evalset.name if evalset else None, "eval_actions": evalset.n_actions if evalset else 0,
        "eval_note": eval_note,
        "rows_seen": len(seen_rows), "actions_seen": seen_actions,
        "every_action_seen": seen_actions >= train.n_actions,
        "supervised_tokens_seen": sup, "train_seconds": round(seconds, 2) if seconds else None,
        "supervised_tokens_per_second": round(sup / seconds, 2) if seconds else None,
    }


def train_sft(recipe: TrainRecipe, out_dir: Path, *, resume: bool = False,
              reading_source: ReadingSource | None = None, harness: str | None = None) -> TrainResult:
    """Train a LoRA adapter as ``recipe`` says, writing everything under ``out_dir``.

    ``resume`` continues from the newest complete checkpoint (optimizer, scheduler, RNG and data position restored).
    ``reading_source`` replaces the health guard's sensors (tests and drills). ``harness`` (``pi@VERSION``) must be
    the one the audit recorded (default: that one); the adapter records it for serving and eval.
    """
    from peft import LoraConfig
    from transformers import AutoTokenizer
    from transformers.integrations import TensorBoardCallback
    from trl.trainer.callbacks import RichProgressCallback

    from harnessfit.train.loss import ActionCollator, ActionWeightedSFTTrainer

    console = Console(stderr=True)
    out_dir = Path(out_dir).resolve()
    ckpt_dir = out_dir / "checkpoints"
    resume_from = newest_checkpoint(ckpt_dir) if resume else None
    if resume and resume_from is None:
        console.print(f"[yellow]--resume: no complete checkpoint in {escape(str(ckpt_dir))}; starting from step 0[/]")
    if not resume and newest_checkpoint(ckpt_dir) is not None:
        raise UserError(f"{out_dir} already holds checkpoints: pass --resume to continue, or choose another --out")
    if recipe.threads:
        torch.set_num_threads(recipe.threads)

    if not recipe.audit_dir:
        raise UserError("the recipe names no audit_dir: set audit_dir: to the folder `harnessfit audit DATASET` wrote "
                        "(by default DATASET-audit beside the dataset), or pass --audit-dir")
    audit_dir = Path(recipe.audit_dir).expanduser().resolve()
    meta = load_meta(audit_dir)
    target = _audit_harness(meta, audit_dir, harness)
    train = load_split(audit_dir, recipe.train_split, layout=recipe.layout, max_records=recipe.max_train_records,
                       max_length=recipe.max_length, sources=recipe.sources)
    if train.empty:
        raise UserError(f"nothing to train on in {audit_dir}: {train.why_empty()}; see the audit's audit.md, or raise "
                        "max_length / widen sources in the recipe")
    evalset, eval_note, eval_skipped = _held_out(audit_dir, recipe)
    if _rank() == 0 and eval_note:
        console.print(f"[yellow]train:[/] {escape(eval_note)}")
    spec = recipe.model or meta.get("model")
    if not spec:
        raise UserError("recipe has no model and the audit's meta.json names none: set model: in the recipe")
    from harnessfit.models import load_error, resolve_model

    resolved = resolve_model(str(spec))
    model_path = str(resolved)
    tok_dir = audit_dir / "tokenizer"
    if not tok_dir.is_dir():
        raise UserError(f"no tokenizer/ in {audit_dir}: training uses the tokenizer the audit saved; re-run "
                        "`harnessfit audit`")
    try:
        tokenizer = AutoTokenizer.from_pretrained(tok_dir)
    except Exception as exc:  # noqa: BLE001 - one line for the user
        raise load_error("the audit's tokenizer", tok_dir, exc) from None
    _check_matches_audit(meta, audit_dir, str(spec), resolved, tokenizer)

    from transformers import AutoConfig

    try:
        cfg = AutoConfig.from_pretrained(model_path)
    except Exception as exc:  # noqa: BLE001 - one line for the user
        raise load_error("a model config", spec, exc) from None
    fp = plan_fast_path(recipe, cfg, train.lengths, world_size=_world())
    model = _load_model(model_path, fp)
    if _rank() == 0:
        for note in fp.notes:
            console.print(f"[dim]train:[/] {escape(note)}")
    revision = getattr(model.config, "_commit_hash", None)
    pin = revision or (model_fingerprint(Path(model_path)) if Path(model_path).is_dir() else None)

    out_dir.mkdir(parents=True, exist_ok=True)
    metrics_path = out_dir / "metrics.jsonl"
    if _rank() == 0:
        (out_dir / "recipe.json").write_bytes(orjson.dumps(recipe.model_dump(), option=orjson.OPT_INDENT_2))
        write_jsonl(out_dir / "skipped.jsonl", [s.model_dump() for s in train.skipped + eval_skipped])
        if resume_from is not None:
            _truncate_metrics(metrics_path, int(resume_from.name.split("-")[-1]))
        elif metrics_path.exists():
            metrics_path.unlink()

    args = RecipeSFTConfig(
        output_dir=str(ckpt_dir),
        per_device_train_batch_size=fp.per_device_batch,
        per_device_eval_batch_size=1,
        gradient_accumulation_steps=fp.grad_accum,
        learning_rate=recipe.learning_rate,
        lr_scheduler_type=recipe.lr_scheduler,
        warmup_steps=recipe.warmup_ratio,
        num_train_epochs=recipe.epochs,
        max_steps=recipe.max_steps,
        seed=recipe.seed,
        data_seed=recipe.seed,
        bf16=fp.dtype == "bf16",
        use_cpu=fp.device == "cpu",
        gradient_checkpointing=fp.gradient_checkpointing,
        torch_compile=fp.torch_compile,
        # packing is done by harnessfit's collator (ActionCollator, padding-free as the fast path says); TRL refuses
        # a custom collator together with its own padding_free switch
        padding_free=False,
        max_length=None,
        completion_only_loss=True,
        eval_strategy="steps" if evalset else "no",
        eval_steps=recipe.eval_every,
        eval_on_start=bool(evalset) and resume_from is None,
        save_strategy="steps",
        save_steps=recipe.save_every,
        save_total_limit=recipe.save_total_limit,
        metric_for_best_model="eval_loss" if evalset else None,
        greater_is_better=False if evalset else None,
        logging_steps=recipe.logging_steps,
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        dataset_num_proc=None,
        remove_unused_columns=False,  # the collator reads action_starts / action_ends / row
        harnessfit_recipe=recipe.model_dump(),
    )
    lora = LoraConfig(r=recipe.lora_r, lora_alpha=recipe.lora_alpha, lora_dropout=recipe.lora_dropout,
                      target_modules=recipe.target_modules, task_type="CAUSAL_LM")

    guard = None
    if recipe.guard.enabled and _rank() == 0:
        guard = HealthGuard(recipe.guard, out_dir, reading_source).start()
    guard_cb = GuardStop(guard)
    tally = RankTally()
    callbacks: list = [MetricsLog(metrics_path), guard_cb, tally]
    if _rank() == 0:
        from torch.utils.tensorboard import SummaryWriter

        callbacks.append(TensorBoardCallback(tb_writer=SummaryWriter(log_dir=str(out_dir / "tensorboard"))))
        if console.is_terminal:
            callbacks.append(RichProgressCallback())
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    collator = ActionCollator(pad_token_id=pad, padding_free=fp.padding_free, weighting=recipe.loss_weighting)
    try:
        trainer = ActionWeightedSFTTrainer(model=model, args=args, train_dataset=train.dataset,
                                           eval_dataset=evalset.dataset if evalset else None,
                                           processing_class=tokenizer, peft_config=lora, callbacks=callbacks,
                                           data_collator=collator, weighting=recipe.loss_weighting)
        output = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    finally:
        if guard is not None:
            guard.close()
    data = _data_facts(recipe, train, evalset, eval_note, trainer, output.metrics.get("train_runtime"))

    ranks_dir = out_dir / "ranks"
    ranks_dir.mkdir(exist_ok=True)
    (ranks_dir / f"rank{_rank()}.json").write_bytes(orjson.dumps({
        "rank": _rank(), "world_size": _world(), "global_step": trainer.state.global_step,
        "micro_batches": tally.micro_batches, "adapter_sha256": _adapter_digest(trainer.model)}))
    stop = guard.reason() if (guard is not None and guard_cb.fired) else None
    status: Literal["completed", "stopped"] = "stopped" if guard_cb.fired else "completed"
    adapter_dir = None
    report_path = None
    if status == "completed" and trainer.is_world_process_zero():
        adapter_dir = out_dir / "adapter"
        if adapter_dir.exists():
            shutil.rmtree(adapter_dir)
        trainer.model.save_pretrained(str(adapter_dir))
        tokenizer.save_pretrained(str(adapter_dir))
        adapter_meta = {
            "harness": target,
            "base_model": str(spec), "base_model_path": model_path, "base_model_revision": pin,
            "template": meta.get("template_name"), "template_sha256": meta.get("template_sha256"),
            "stop_token_ids": meta.get("stop_token_ids"),
            "audit_dir": str(audit_dir), "train_records": train.n_actions, "train_rows": len(train.ids),
            "layout": recipe.layout, "loss_weighting": recipe.loss_weighting, "global_step": trainer.state.global_step,
            "fast_path": fp.model_dump(), "recipe": recipe.model_dump(),
        }
        (adapter_dir / ADAPTER_META).write_bytes(orjson.dumps(adapter_meta, option=orjson.OPT_INDENT_2))
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()
    summary = _curve_summary(metrics_path)
    if trainer.is_world_process_zero():
        from harnessfit.train.report import write_report

        report_path = write_report(out_dir, recipe=recipe, fast_path=fp, summary=summary, status=status,
                                   stop_reason=stop.reason if stop else None, train_records=train.n_actions,
                                   skipped=len(train.skipped) + len(eval_skipped), data=data)
    result = TrainResult(
        status=status, out_dir=out_dir, adapter_dir=adapter_dir, report_path=report_path, metrics_path=metrics_path,
        guard_path=guard.samples_path if guard else None, checkpoint_dir=newest_checkpoint(ckpt_dir),
        global_step=trainer.state.global_step, stop_reason=stop.reason if stop else None,
        resumed_from=resume_from, harness=target, data=data, **summary)
    if trainer.is_world_process_zero():
        (out_dir / "result.json").write_bytes(orjson.dumps(result.model_dump(mode="json"), option=orjson.OPT_INDENT_2))
    return result
