"""``train_sft``: LoRA/QLoRA SFT on the audited tokenized set with TRL's SFTTrainer + PEFT.

``HarnessfitSFTConfig`` *is* the trainer's arguments; this module only prepares the run folder, checks the audit,
builds the trainer, trains, and writes the adapter and the report (``harnessfit.train.run`` holds what SFT and
GRPO share). The run folder adds ``OUT/train_report.md`` and ``OUT/plots/*.png`` to the shared layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import orjson
import torch
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from harnessfit.core.jsonio import read_jsonl, write_jsonl
from harnessfit.errors import UserError
from harnessfit.harness.versions import harness_recorded_in, stage_harness
from harnessfit.models import load_error, load_model
from harnessfit.pipeline.funnel import train_warnings
from harnessfit.train.config import HarnessfitSFTConfig
from harnessfit.train.data import TokenizedSplit, find_eval_splits, load_split, sft_fidelity
from harnessfit.train.fastpath import FastPath, plan_fast_path
from harnessfit.train.grpo_data import dataset_dir_of
from harnessfit.train.guard import ReadingSource
from harnessfit.train.loss import ActionCollator, ActionWeightedSFTTrainer
from harnessfit.train.report import write_report
from harnessfit.train.run import (
    STOPPED_EXIT_CODE,
    Audited,
    RunCallbacks,
    RunDir,
    model_pin,
    newest_checkpoint,
    open_audit,
    prepare_run,
    rank,
    run_callbacks,
    save_adapter,
    world,
    write_rank_tally,
    write_recipe,
)

__all__ = ["TrainResult", "train_sft", "STOPPED_EXIT_CODE"]


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


def _load_model(spec: str, fp: FastPath):
    """The base model through ``harnessfit.models.load_model`` with the fast path's dtype, attention and NF4 placement
    (this process's GPU under accelerate), then Liger kernels when the fast path asks for them."""
    import os

    device = (
        f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}" if fp.device == "cuda" and fp.quantization == "nf4" else "cpu"
    )
    model = load_model(
        spec,
        dtype=torch.bfloat16 if fp.dtype == "bf16" else torch.float32,
        quantization=fp.quantization,
        device=device,
        attn_implementation=fp.attn_implementation,
    )
    if fp.liger:
        from liger_kernel.transformers import _apply_liger_kernel_to_instance  # type: ignore

        _apply_liger_kernel_to_instance(model=model, fused_linear_cross_entropy=False)
    return model


def _curve_summary(metrics_path: Path) -> dict:
    evals = [r for r in read_jsonl(metrics_path) if "eval_loss" in r] if metrics_path.is_file() else []
    if not evals:
        return {"initial_val_loss": None, "final_val_loss": None, "best_val_loss": None, "best_step": None}
    best = min(evals, key=lambda r: (r["eval_loss"], r["step"]))
    return {
        "initial_val_loss": evals[0]["eval_loss"],
        "final_val_loss": evals[-1]["eval_loss"],
        "best_val_loss": best["eval_loss"],
        "best_step": best["step"],
    }


def _audit_harness(audit_dir: str | None, requested: str | None) -> str:
    """The harness the run trains for: the audit's (``harness`` must agree with it), else the default. An audit
    folder that cannot be read is left to ``open_audit``'s errors."""
    path = Path(audit_dir).expanduser().resolve() if audit_dir else None
    found = harness_recorded_in(path)
    return stage_harness(
        requested,
        found[0] if found else None,
        what=f"the audit {path}",
        stage="train sft",
        redo="rebuild the dataset and re-run `harnessfit audit`",
    )


def _splits(
    cfg: HarnessfitSFTConfig, audited: Audited
) -> tuple[TokenizedSplit, TokenizedSplit | None, str | None, list]:
    """The training split (a UserError when it has no trainable action) and the held-out one (``_held_out``)."""
    train = load_split(
        audited.audit_dir,
        cfg.train_split,
        layout=cfg.layout,
        max_records=cfg.max_train_records,
        max_length=cfg.max_record_length,
        sources=cfg.sources,
        not_selected=_below_tier(audited.audit_dir, cfg, cfg.train_split),
    )
    if train.empty:
        raise UserError(
            f"nothing to train on in {audited.audit_dir}: {train.why_empty()}; see the audit's audit.md, "
            "or raise max_record_length / widen sources in the recipe"
        )
    return (train, *_held_out(audited.audit_dir, cfg))


def _below_tier(audit_dir: Path, cfg: HarnessfitSFTConfig, split: str) -> dict[str, str]:
    """The actions of ``split`` whose tier the recipe does not select (``fidelity: byte``), read from the build."""
    if cfg.fidelity == "content":
        return {}
    return sft_fidelity(dataset_dir_of(audit_dir, None), split, cfg.fidelity)


def _held_out(audit_dir: Path, cfg: HarnessfitSFTConfig) -> tuple[TokenizedSplit | None, str | None, list]:
    """The held-out split to evaluate on: the first candidate (``eval_split``, or with 'auto' every conventional name
    present) that has trainable actions. A candidate with none is said plainly and the next one is tried; with none
    left the run trains without a held-out loss instead of stopping. Returns (split, note for the log, skipped)."""
    notes: list[str] = []
    skipped: list = []
    for name in find_eval_splits(audit_dir, cfg.eval_split):
        if name == cfg.train_split:
            continue
        split = load_split(
            audit_dir,
            name,
            layout=cfg.layout,
            max_records=cfg.max_eval_records,
            max_length=cfg.max_record_length,
            sources=cfg.sources,
            not_selected=_below_tier(audit_dir, cfg, name),
        )
        skipped += split.skipped
        if not split.empty:
            note = f"{'; '.join(notes)}; evaluating on split {name!r} instead" if notes else None
            return split, note, skipped
        notes.append(split.why_empty())
    if not notes:
        return None, "no held-out split in the audit: training without a held-out loss", skipped
    return None, f"{'; '.join(notes)}: training without a held-out loss", skipped


def _data_facts(
    cfg: HarnessfitSFTConfig,
    train: TokenizedSplit,
    evalset: TokenizedSplit | None,
    eval_note: str | None,
    trainer,
    seconds: float | None,
) -> dict:
    """What training read and what it saw: tokens per epoch, actions, and how many actions the run's micro-batches
    held at least once (counted from the rows each training micro-batch carried, in this process)."""
    seen_rows = trainer.rows_seen
    seen_actions = sum(len(train.action_ids[r]) for r in seen_rows if r < len(train.action_ids))
    sup = trainer.supervised_seen
    return {
        "layout": cfg.layout,
        "loss_weighting": cfg.loss_weighting,
        "train_split": train.name,
        "train_rows": len(train.ids),
        "train_actions": train.n_actions,
        "tokens_per_epoch": train.n_tokens,
        "supervised_tokens_per_epoch": train.n_supervised,
        "train_skipped": len(train.skipped),
        "train_skipped_by_reason": train.skipped_by_reason(),
        "eval_split": evalset.name if evalset else None,
        "eval_actions": evalset.n_actions if evalset else 0,
        "eval_note": eval_note,
        "rows_seen": len(seen_rows),
        "actions_seen": seen_actions,
        "every_action_seen": seen_actions >= train.n_actions,
        "supervised_tokens_seen": sup,
        "train_seconds": round(seconds, 2) if seconds else None,
        "supervised_tokens_per_second": round(sup / seconds, 2) if seconds else None,
        "trunk_cache": trainer.trunk.facts() if trainer.trunk is not None else None,
    }


def _apply_fast_path(cfg: HarnessfitSFTConfig, fp: FastPath, run: RunDir, has_eval: bool) -> None:
    """What this run resolved goes into the trainer's arguments (they are the config: each value set once here)."""
    cfg.output_dir = str(run.ckpt_dir)
    cfg.per_device_train_batch_size, cfg.gradient_accumulation_steps = fp.per_device_batch, fp.grad_accum
    cfg.activation_checkpointing = cfg.gradient_checkpointing = fp.gradient_checkpointing
    cfg.per_device_eval_batch_size = 1
    if not has_eval:
        cfg.eval_strategy, cfg.eval_on_start, cfg.metric_for_best_model = "no", False, None
    elif run.resume_from is not None:
        cfg.eval_on_start = False  # the held-out loss before training is already in metrics.jsonl


def build_trainer(
    cfg: HarnessfitSFTConfig,
    audited: Audited,
    train: TokenizedSplit,
    evalset: TokenizedSplit | None,
    fp: FastPath,
    callbacks: RunCallbacks,
):
    """TRL's SFTTrainer (with harnessfit's per-action loss weighting, ``train.loss``) on the audited token ids with a
    LoRA adapter on the fast path's model."""
    from peft import LoraConfig

    model = _load_model(audited.model_path, fp)
    lora = LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=cfg.lora_targets(),
        task_type="CAUSAL_LM",
    )
    tok = audited.tokenizer
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    collator = ActionCollator(pad_token_id=pad, padding_free=fp.padding_free, weighting=cfg.loss_weighting)
    # packing is done by harnessfit's collator (padding-free as the fast path says): TRL refuses a custom collator
    # together with its own padding_free switch, and the collator reads action_starts / action_ends / row
    cfg.padding_free, cfg.remove_unused_columns = False, False
    return ActionWeightedSFTTrainer(
        model=model,
        args=cfg,
        train_dataset=train.dataset,
        eval_dataset=evalset.dataset if evalset else None,
        processing_class=tok,
        peft_config=lora,
        callbacks=callbacks.callbacks,
        data_collator=collator,
        weighting=cfg.loss_weighting,
        trunk_budget=fp.trunk_cache_bytes or None,
    )


def train_sft(
    cfg: HarnessfitSFTConfig,
    out_dir: Path,
    *,
    resume: bool = False,
    reading_source: ReadingSource | None = None,
    extra_callbacks: Sequence[Any] = (),
) -> TrainResult:
    """Train a LoRA adapter as ``cfg`` says, writing everything under ``out_dir``.

    ``resume`` continues from the newest complete checkpoint (optimizer, scheduler, RNG and data position restored).
    ``reading_source`` replaces the health guard's sensors (tests and drills); ``extra_callbacks`` are added to the
    trainer's (a benchmark's step clock, ``bench/gpu/measure.py``). ``cfg.harness`` (``pi@VERSION``)
    must be the one the audit recorded (default: that one); the adapter records it for serving and eval.
    """
    from transformers import AutoConfig

    console = Console(stderr=True)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    target = _audit_harness(cfg.audit_dir, cfg.harness)  # before anything is loaded: a mismatch is one line
    audited = open_audit(cfg.audit_dir, cfg.model)
    train, evalset, eval_note, eval_skipped = _splits(cfg, audited)
    if rank() == 0 and eval_note:
        console.print(f"[yellow]train:[/] {escape(eval_note)}")
    try:
        model_cfg = AutoConfig.from_pretrained(audited.model_path)
    except Exception as exc:  # noqa: BLE001 - one line for the user
        raise load_error("a model config", audited.spec, exc) from None
    run = prepare_run(out_dir, resume, console)
    fp = plan_fast_path(cfg, model_cfg, train.lengths, world_size=world())
    if rank() == 0:
        for note in fp.notes:
            console.print(f"[dim]train:[/] {escape(note)}")
        write_jsonl(run.out_dir / "skipped.jsonl", [s.model_dump() for s in train.skipped + eval_skipped])
    _apply_fast_path(cfg, fp, run, evalset is not None)
    write_recipe(run, cfg)
    callbacks = run_callbacks(run, cfg.guard_rules, reading_source, console)
    callbacks.callbacks.extend(extra_callbacks)
    try:
        trainer = build_trainer(cfg, audited, train, evalset, fp, callbacks)
        if rank() == 0 and trainer.trunk is not None:
            console.print(f"[dim]train:[/] {escape(trainer.trunk.describe())}")
        output = trainer.train(resume_from_checkpoint=str(run.resume_from) if run.resume_from else None)
    finally:
        callbacks.close()
    data = _data_facts(cfg, train, evalset, eval_note, trainer, output.metrics.get("train_runtime"))
    return _finish(cfg, run, trainer, audited, train, eval_skipped, fp, callbacks, target, data)


def _finish(
    cfg,
    run: RunDir,
    trainer,
    audited: Audited,
    train: TokenizedSplit,
    eval_skipped: list,
    fp: FastPath,
    callbacks: RunCallbacks,
    target: str,
    data: dict,
) -> TrainResult:
    """Per-rank tally, the adapter with its pins (completed runs), the report and result.json."""
    write_rank_tally(run, trainer, callbacks.tally)
    stop = callbacks.stop_reason()
    status: Literal["completed", "stopped"] = "stopped" if callbacks.guard_stop.fired else "completed"
    adapter_dir = report_path = None
    if status == "completed" and trainer.is_world_process_zero():
        meta = audited.meta
        adapter_dir = save_adapter(
            trainer,
            audited.tokenizer,
            run.out_dir,
            {
                "harness": target,
                "base_model": audited.spec,
                "base_model_path": audited.model_path,
                "base_model_revision": model_pin(trainer.model, audited.model_path),
                "template": meta.get("template_name"),
                "template_sha256": meta.get("template_sha256"),
                "stop_token_ids": meta.get("stop_token_ids"),
                "audit_dir": str(audited.audit_dir),
                "train_records": train.n_actions,
                "train_rows": len(train.ids),
                "layout": cfg.layout,
                "loss_weighting": cfg.loss_weighting,
                "global_step": trainer.state.global_step,
                "fast_path": fp.model_dump(),
                "recipe": getattr(cfg, "recipe_record", None),
                "trainer": "sft",
            },
        )
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()
    summary = _curve_summary(run.metrics_path)
    if trainer.is_world_process_zero():
        report_path = write_report(
            run.out_dir,
            recipe=cfg,
            fast_path=fp,
            summary=summary,
            status=status,
            stop_reason=stop,
            train_records=train.n_actions,
            skipped=len(train.skipped) + len(eval_skipped),
            data=data,
        )
    result = TrainResult(
        status=status,
        out_dir=run.out_dir,
        adapter_dir=adapter_dir,
        report_path=report_path,
        metrics_path=run.metrics_path,
        guard_path=callbacks.guard.samples_path if callbacks.guard else None,
        checkpoint_dir=newest_checkpoint(run.ckpt_dir),
        global_step=trainer.state.global_step,
        stop_reason=stop,
        resumed_from=run.resume_from,
        harness=target,
        data=data,
        **summary,
    )
    if trainer.is_world_process_zero():
        (run.out_dir / "result.json").write_bytes(
            orjson.dumps(result.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
        )
        for warning in train_warnings(run.out_dir):  # a run that learned from very little says so, not just "completed"
            Console(stderr=True).print(f"[yellow]warning:[/] {escape(warning)}")
    return result
