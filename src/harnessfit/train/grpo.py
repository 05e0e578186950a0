"""``train_grpo``: GRPO (RL from AI feedback) on the build's decision points with TRL's ``GRPOTrainer`` + PEFT.

For each decision point (a real conversation state) the policy samples a group of next turns; the rewards
(``harnessfit.rewards``: harness-verifiable components and an optional LLM judge) score each, and the
advantage is relative to the group. ``HarnessfitGRPOConfig`` *is* the trainer's arguments. The run folder adds to
the shared layout (``harnessfit.train.run``):

```
OUT/completions.jsonl                   one row per completion: step, group, reward, every component, length, ...
OUT/heldout_before.json  heldout_after.json   held-out decision points, greedy and best-of-G, same rewards
OUT/eval/before_after.md                the in-harness table through the real Pi (when eval_suite is set)
OUT/grpo_report.md  OUT/grpo_stats.json  OUT/plots/*.png
```

End of turn: TRL stops generation and decides truncation with the model's ``generation_config.eos_token_id`` plus
the tokenizer's eos. The audit's end-of-turn ids are written there first, so a completion that ends with the
template's end-of-turn token (``<|im_end|>`` when the tokenizer's eos is another token) is neither generated past
nor masked as truncated.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import orjson
import torch
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from trl import GRPOTrainer

from harnessfit.core.jsonio import write_jsonl
from harnessfit.errors import UserError
from harnessfit.eval import run_eval
from harnessfit.eval.compare import compare
from harnessfit.harness.card import load_harness
from harnessfit.harness.versions import normalise_harness, recorded_harness, stage_harness
from harnessfit.models import load_model
from harnessfit.pipeline.funnel import grpo_warnings
from harnessfit.rewards.reward_set import RewardSet
from harnessfit.train.config import HarnessfitGRPOConfig
from harnessfit.train.grpo_data import DecisionPoints, dataset_dir_of, load_decision_points, load_heldout_points
from harnessfit.train.grpo_report import write_grpo_report
from harnessfit.train.guard import ReadingSource
from harnessfit.train.heldout import HELDOUT_FILES, evaluate_points, write
from harnessfit.train.run import (
    Audited,
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

__all__ = ["GRPOResult", "HarnessfitGRPOTrainer", "train_grpo", "set_end_of_turn", "load_policy"]

COMPLETIONS = "completions.jsonl"


class GRPOResult(BaseModel):
    """What a GRPO run produced: the training reward first vs last 10 percent of steps, held-out summaries."""

    status: Literal["completed", "stopped"]
    out_dir: Path
    adapter_dir: Path | None
    report_path: Path | None
    metrics_path: Path
    completions_path: Path
    guard_path: Path | None
    checkpoint_dir: Path | None
    global_step: int
    stop_reason: str | None = None
    resumed_from: Path | None = None
    reward_first: float | None = None
    reward_last: float | None = None
    welch_p: float | None = None
    unscorable: int = 0
    heldout_before: dict[str, Any] | None = None
    heldout_after: dict[str, Any] | None = None
    in_harness_table: Path | None = None

    def heldout_lines(self) -> list[str]:
        def pct(x: float | None) -> str:
            return "–" if x is None else f"{100 * x:.1f} %"

        out = []
        for name, h in (("before", self.heldout_before), ("after", self.heldout_after)):
            if h:
                out.append(
                    f"held-out {name}: valid calls greedy {pct(h.get('greedy_valid_call_rate'))}, best of "
                    f"{h.get('generations')} {pct(h.get('best_of_g_valid_call_rate'))}; reward greedy "
                    f"{_f(h.get('greedy_reward'))}, best-of-G {_f(h.get('best_of_g_reward'))}"
                )
        return out


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.4f}"


class HarnessfitGRPOTrainer(GRPOTrainer):
    """TRL's GRPOTrainer; the prompts are text already rendered with the audited template, so they are tokenized
    without extra special tokens — exactly as ``harnessfit serve`` tokenizes the same request (TRL's text path
    would add the tokenizer's BOS in front of a template that already wrote one)."""

    def _tokenize_prompts(self, prompts: list):
        if prompts and isinstance(prompts[0], str):
            ids = self.processing_class(text=prompts, add_special_tokens=False)["input_ids"]
            return [list(x) for x in ids], None, {}
        return super()._tokenize_prompts(prompts)


def set_end_of_turn(model, tokenizer, stop_ids: list[int]) -> list[int]:
    """Make every end-of-turn id an eos of the model's generation config (see the module docstring); returns the
    list TRL will use."""
    gen = model.generation_config
    current = gen.eos_token_id if isinstance(gen.eos_token_id, list) else [gen.eos_token_id]
    ids: list[int] = []
    for i in [*current, tokenizer.eos_token_id, *stop_ids]:
        if i is not None and int(i) not in ids:
            ids.append(int(i))
    gen.eos_token_id = ids
    if gen.pad_token_id is None:
        gen.pad_token_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else ids[0]
    return ids


def _placement(cfg: HarnessfitGRPOConfig) -> tuple[str, str, list[str]]:
    """(quantization, attention, notes) for this machine."""
    import importlib.util

    notes = []
    cuda = torch.cuda.is_available() and not cfg.use_cpu
    quant = cfg.quantization
    if quant == "auto":
        quant = "nf4" if cuda and importlib.util.find_spec("bitsandbytes") else "none"
        if quant == "none":
            notes.append("QLoRA (NF4) needs CUDA + bitsandbytes: plain LoRA on full-precision weights")
    attn = "sdpa" if cfg.attn_implementation == "auto" else cfg.attn_implementation
    notes.append(f"generation: {'vLLM (' + cfg.vllm_mode + ')' if cfg.use_vllm else 'transformers'}")
    return quant, attn, notes


def load_policy(cfg: HarnessfitGRPOConfig, audited: Audited) -> tuple[Any, Any, list[str]]:
    """The policy to train: the base model (fresh LoRA from ``peft_config``) or the SFT adapter on it, trainable.
    Returns (model, peft_config or None, notes)."""
    from peft import LoraConfig, PeftModel

    quant, attn, notes = _placement(cfg)
    device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}" if quant == "nf4" else "cpu"
    model = load_model(
        audited.model_path,
        dtype=torch.bfloat16 if cfg.bf16 else torch.float32,
        quantization=quant,
        device=device,
        attn_implementation=attn,
    )
    if not cfg.sft_adapter:
        lora = LoraConfig(
            r=cfg.lora_r,
            lora_alpha=cfg.lora_alpha,
            lora_dropout=cfg.lora_dropout,
            target_modules=cfg.lora_targets(),
            task_type="CAUSAL_LM",
        )
        return model, lora, notes
    _check_sft_adapter(Path(cfg.sft_adapter), audited)
    try:
        model = PeftModel.from_pretrained(model, cfg.sft_adapter, is_trainable=True)
    except Exception as exc:  # noqa: BLE001 - one line for the user
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise UserError(
            f"cannot continue the SFT adapter {cfg.sft_adapter} on {audited.model_path}: {first[:200]}"
        ) from None
    notes.append(f"continuing the SFT adapter {cfg.sft_adapter} (its rank and targets; KL to a frozen copy of it)")
    return model, None, notes


def _check_sft_adapter(path: Path, audited: Audited) -> None:
    meta_path = path / "harnessfit_adapter.json"
    if not meta_path.is_file():
        return
    meta = orjson.loads(meta_path.read_bytes())
    sha = meta.get("template_sha256")
    if sha and sha != audited.meta.get("template_sha256"):
        raise UserError(
            f"the SFT adapter {path} was trained with another chat template (sha256 {sha[:12]}…) than "
            f"the audit at {audited.audit_dir}: use the audit the adapter was trained on"
        )
    base = meta.get("base_model_path")
    if base and Path(base).resolve() != Path(audited.model_path).resolve():
        raise UserError(
            f"the SFT adapter {path} pins base {base}, the audit's model is {audited.model_path}: use the same base"
        )


def _target(cfg: HarnessfitGRPOConfig, audited: Audited, dataset_dir: Path) -> str:
    """The harness (``pi@VERSION``) the run trains for: the one the audit (else the dataset) was made for —
    ``cfg.harness`` must agree with it (``harness.versions.stage_harness``) — else the default."""
    manifest = dataset_dir / "manifest.json"
    recorded = recorded_harness(audited.meta) or (
        recorded_harness(orjson.loads(manifest.read_bytes())) if manifest.is_file() else None
    )
    return stage_harness(
        cfg.harness,
        recorded,
        what=f"the audit {audited.audit_dir}",
        stage="train grpo",
        redo="rebuild the dataset and re-run `harnessfit audit`",
    )


def _heldout(
    cfg, model, tokenizer, points: DecisionPoints | None, rewards, run: RunDir, which: str, console: Console
) -> dict[str, Any] | None:
    if points is None or rank() != 0:
        return None
    path = run.out_dir / HELDOUT_FILES[which]
    if which == "before" and path.is_file() and run.resume_from is not None:
        return orjson.loads(path.read_bytes())  # measured before the interruption, on the same starting policy
    console.print(f"[dim]grpo:[/] held-out evaluation {which} training ({len(points.rows)} decision points)")
    summary = evaluate_points(
        model,
        tokenizer,
        points.rows,
        rewards,
        generations=cfg.heldout_generations or cfg.num_generations,
        temperature=cfg.temperature,
        max_new_tokens=cfg.max_completion_length,
        seed=cfg.seed,
        progress=console.is_terminal,
    )
    write(path, summary)
    return summary


def train_grpo(
    cfg: HarnessfitGRPOConfig,
    out_dir: Path,
    *,
    resume: bool = False,
    reading_source: ReadingSource | None = None,
    judge_client: Any = None,
    extra_callbacks: Sequence[Any] = (),
) -> GRPOResult:
    """GRPO as ``cfg`` says, writing everything under ``out_dir`` (see the module docstring).

    ``resume`` continues from the newest complete checkpoint. ``reading_source`` replaces the health guard's
    sensors; ``judge_client`` replaces the judge built from ``cfg.judge`` (tests); ``extra_callbacks`` are added to
    the trainer's (a benchmark's step clock)."""
    console = Console(stderr=True)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    audited = open_audit(cfg.audit_dir, cfg.model)
    if "<tool_call>" not in (audited.tokenizer.chat_template or ""):
        raise UserError(
            f"the audited template ({audited.meta.get('template_name')}) does not write <tool_call> blocks; "
            "the verifiable rewards parse that format (audit with a ChatML/Hermes tool template)"
        )
    dataset_dir = dataset_dir_of(audited.audit_dir, cfg.dataset_dir)
    target = _target(cfg, audited, dataset_dir)
    tok = audited.tokenizer
    train = load_decision_points(
        dataset_dir,
        cfg.train_split,
        tok,
        sources=cfg.sources,
        max_records=cfg.max_train_records,
        max_prompt_length=cfg.max_prompt_length,
        fidelity=cfg.fidelity,
    )
    heldout, heldout_note = (
        load_heldout_points(
            dataset_dir,
            cfg.eval_split,
            tok,
            sources=cfg.sources,
            fidelity=cfg.fidelity,
            max_records=cfg.heldout_max_records,
            max_prompt_length=cfg.max_prompt_length,
        )
        if cfg.heldout
        else (None, "held-out evaluation off (heldout: false)")
    )
    logs = (COMPLETIONS, *(f"completions.rank{r}.jsonl" for r in range(1, world())))
    run = prepare_run(out_dir, resume, console, logs=logs)
    cfg.output_dir = str(run.ckpt_dir)
    model, lora, notes = load_policy(cfg, audited)
    stop_ids = set_end_of_turn(model, tok, audited.stop_ids)
    if cfg.use_vllm:  # vLLM samples with its own params: make the same ids end a completion there
        cfg.generation_kwargs = {**(cfg.generation_kwargs or {}), "stop_token_ids": stop_ids}
    rewards = RewardSet(
        cfg.rewards,
        tokenizer=tok,
        stop_ids=stop_ids,
        card=load_harness(target),
        format_error_reward=cfg.format_error_reward,
        overlong_penalty=cfg.overlong_penalty,
        judge=cfg.judge,
        log_path=run.out_dir / COMPLETIONS,
        num_generations=cfg.num_generations,
        judge_client=judge_client,
    )
    why = Counter(p.reason.value for p in train.skipped)
    notes.append(
        f"train: {len(train.rows)} decision points of split {cfg.train_split!r}"
        + (f" from sources {', '.join(cfg.sources)}" if cfg.sources else " (every source)")
        + (f"; skipped {', '.join(f'{k} {v}' for k, v in why.most_common())}" if why else "")
    )
    notes.append(heldout_note)
    if rank() == 0:
        for note in notes:
            console.print(f"[dim]grpo:[/] {escape(note)}")
        write_jsonl(
            run.out_dir / "skipped.jsonl",
            [s.model_dump() for s in train.skipped + (heldout.skipped if heldout else [])],
        )
    write_recipe(run, cfg)
    before = _heldout(cfg, model, tok, heldout, rewards, run, "before", console)
    callbacks = run_callbacks(run, cfg.guard_rules, reading_source, console)
    callbacks.callbacks.extend(extra_callbacks)
    try:
        trainer = HarnessfitGRPOTrainer(
            model=model,
            reward_funcs=[rewards],
            args=cfg,
            train_dataset=train.dataset(),
            processing_class=tok,
            peft_config=lora,
            callbacks=callbacks.callbacks,
        )
        trainer.train(resume_from_checkpoint=str(run.resume_from) if run.resume_from else None)
    finally:
        callbacks.close()
    write_rank_tally(run, trainer, callbacks.tally)
    status: Literal["completed", "stopped"] = "stopped" if callbacks.guard_stop.fired else "completed"
    adapter_dir = after = table = None
    if status == "completed" and rank() == 0:
        adapter_dir = save_adapter(
            trainer,
            tok,
            run.out_dir,
            {
                "harness": target,
                "base_model": audited.spec,
                "base_model_path": audited.model_path,
                "base_model_revision": model_pin(trainer.model, audited.model_path),
                "template": audited.meta.get("template_name"),
                "template_sha256": audited.meta.get("template_sha256"),
                "stop_token_ids": audited.meta.get("stop_token_ids"),
                "audit_dir": str(audited.audit_dir),
                "dataset_dir": str(dataset_dir),
                "train_records": len(train.rows),
                "global_step": trainer.state.global_step,
                "sft_adapter": cfg.sft_adapter,
                "recipe": getattr(cfg, "recipe_record", None),
                "trainer": "grpo",
            },
        )
        after = _heldout(cfg, trainer.model, tok, heldout, rewards, run, "after", console)
        if cfg.eval_suite:
            table = in_harness_eval(cfg, audited, adapter_dir, run.out_dir, target)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.barrier()
    return _finish(run, trainer, callbacks, status, before, after, table, notes)


def _finish(run: RunDir, trainer, callbacks, status, before, after, table, notes) -> GRPOResult:
    report_path, stats = (None, {})
    stop = callbacks.stop_reason()
    if rank() == 0:
        report_path, stats = write_grpo_report(run.out_dir, status=status, stop_reason=stop, notes=notes)
    result = GRPOResult(
        status=status,
        out_dir=run.out_dir,
        adapter_dir=run.out_dir / "adapter" if status == "completed" else None,
        report_path=report_path,
        metrics_path=run.metrics_path,
        completions_path=run.out_dir / COMPLETIONS,
        guard_path=callbacks.guard.samples_path if callbacks.guard else None,
        checkpoint_dir=newest_checkpoint(run.ckpt_dir),
        global_step=trainer.state.global_step,
        stop_reason=stop,
        resumed_from=run.resume_from,
        reward_first=(stats.get("first") or {}).get("mean_reward"),
        reward_last=(stats.get("last") or {}).get("mean_reward"),
        welch_p=stats.get("welch_p"),
        unscorable=(stats.get("all") or {}).get("unscorable", 0),
        heldout_before=_brief(before),
        heldout_after=_brief(after),
        in_harness_table=table,
    )
    if rank() == 0:
        (run.out_dir / "result.json").write_bytes(
            orjson.dumps(result.model_dump(mode="json"), option=orjson.OPT_INDENT_2)
        )
        for warning in grpo_warnings(run.out_dir):  # every group zero-variance: nothing was learned
            Console(stderr=True).print(f"[yellow]warning:[/] {escape(warning)}")
    return result


def _brief(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if summary is None else {k: v for k, v in summary.items() if k != "per_point"}


def in_harness_eval(
    cfg: HarnessfitGRPOConfig, audited: Audited, adapter_dir: Path, out_dir: Path, target: str | None = None
) -> Path:
    """The suite through the real harness ``target`` (the run's) with the starting policy (base, or base + SFT
    adapter) and the GRPO adapter, and the before/after table (``eval agent`` + ``eval compare``'s public
    functions)."""
    common: dict[str, Any] = {
        "seeds": 1,
        "workers": 1,
        "max_turns": cfg.eval_max_turns,
        "max_seconds": cfg.eval_max_seconds,
        "progress": False,
        "max_tokens": cfg.max_completion_length,
        "threads": cfg.threads or 1,
        "tokenizer": audited.audit_dir / "tokenizer",
        "harness": normalise_harness(target),
    }
    name = Path(audited.spec).name
    results = []
    for label, adapter in (("before", cfg.sft_adapter), ("after", adapter_dir)):
        extra = {"adapter": Path(adapter)} if adapter else {}
        run_eval(
            audited.spec, Path(cfg.eval_suite), out_dir / "eval" / label, model_id=f"{name}-{label}", **common, **extra
        )
        results.append(out_dir / "eval" / label / "results.json")
    return Path(compare(results, out_dir / "eval" / "before_after.md"))
