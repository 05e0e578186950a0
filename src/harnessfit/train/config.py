"""Training configs that EXTEND TRL's: ``HarnessfitSFTConfig(SFTConfig)`` and ``HarnessfitGRPOConfig(GRPOConfig)``.

Every TRL / transformers argument keeps its name, type and meaning; harnessfit adds a few fields (where the data is,
the health guard, the LoRA adapter, the rewards and the judge) and overrides the defaults the published recipes
change. Each default is declared once, on the field, with a help text in ``metadata`` that ``--help`` prints.
Cross-field checks run in ``__post_init__`` and say the cause and the fix.

A recipe is a YAML (or TOML) mapping of field names to values, read through TRL's ``TrlParser``, so any field can
also be given as a flag (``harnessfit train sft RECIPE --learning_rate 2e-4 --max-steps 10``); flags win over the
recipe. ``auto`` (or leaving a field unset) means "decide from the machine" wherever a field says so.

No ``from __future__ import annotations`` here: ``HfArgumentParser`` reads the field types at run time.
"""

import difflib
import json
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import yaml
from trl import GRPOConfig, SFTConfig, TrlParser

from harnessfit.errors import UserError
from harnessfit.rewards import JudgeSettings, reward_weights
from harnessfit.serve.vllm import vllm_available
from harnessfit.train.guard_rules import GuardRules

__all__ = [
    "HarnessfitSFTConfig",
    "HarnessfitGRPOConfig",
    "load_config",
    "load_sft_config",
    "load_grpo_config",
    "parse_cli",
    "config_help",
    "RENAMED_KEYS",
    "ATTENTION_PROJECTIONS",
]

# keys of the recipes before the configs extended TRL, and their TRL names now
RENAMED_KEYS = {
    "batch_size": "per_device_train_batch_size",
    "grad_accum": "gradient_accumulation_steps",
    "epochs": "num_train_epochs",
    "lr_scheduler": "lr_scheduler_type",
    "warmup_ratio": "warmup_steps",
    "eval_every": "eval_steps",
    "save_every": "save_steps",
    "target_modules": "lora_target_modules",
    "dtype": "bf16",
    "device": "use_cpu",
    "liger_kernel": "liger",
}
# fields whose value is worked out from the machine when left unset; "auto" in a recipe means unset
_AUTO_FIELDS = ("bf16", "activation_checkpointing", "gradient_checkpointing", "records_per_row", "use_vllm")
# fields holding paths: relative ones are read relative to the recipe's folder when they exist there
_PATH_FIELDS = ("audit_dir", "model", "dataset_dir", "sft_adapter", "eval_suite")
# fields holding a mapping (JSON text on the command line)
_DICT_FIELDS = ("guard", "rewards", "judge")

ATTENTION_PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj"]


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _as_dict(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(
                f"{name} must be a mapping (JSON text on the command line, e.g. "
                f"--{name} '{{\"key\": 1}}'), got {value!r}"
            ) from None
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a mapping of key: value, got {type(value).__name__}")
    return dict(value)


def _pydantic_error(exc: Exception, name: str) -> ValueError:
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or name
        return ValueError(f"{name}.{where}: {first['msg'].removeprefix('Value error, ')}")
    return ValueError(f"{name}: {exc}")


@dataclass
class _HarnessfitFields:
    """Fields both trainers add to TRL's (what to train on, which model, how to place it, the health guard)."""

    audit_dir: str | None = field(
        default=None,
        metadata={
            "help": "Folder written by `harnessfit audit DATASET` (tokenized/, tokenizer/, meta.json); by default the "
            "audit writes DATASET-audit beside the dataset. Required."
        },
    )
    model: str | None = field(
        default=None,
        metadata={"help": "Base model spec (alias, local folder, Hugging Face id); default: the audit's model."},
    )
    sources: list[str] | None = field(
        default=None,
        metadata={
            "help": "Train only on records from these trace formats (e.g. pi); unset = all. The others are listed "
            "as skipped with reason source_not_selected."
        },
    )
    fidelity: Literal["byte", "content"] = field(
        default="content",
        metadata={
            "help": "Lowest fidelity tier of action to train on: content = all (a context may hold a command output the "
            "source agent is documented to have trimmed or stripped); byte = only actions whose whole context is known "
            "byte for byte (a chain is cut before its first content-tier action; the others are listed as skipped "
            "with reason fidelity_not_selected)."
        },
    )
    quantization: Literal["auto", "nf4", "none"] = field(
        default="auto",
        metadata={
            "help": "auto = 4-bit NF4 with double quantization (QLoRA) where CUDA + bitsandbytes exist, plain LoRA "
            "otherwise; nf4; none."
        },
    )
    attn_implementation: str = field(
        default="auto",
        metadata={"help": "auto = flex_attention on GPU with packed rows, sdpa otherwise; or any transformers name."},
    )
    liger: Literal["auto", "on", "off"] = field(
        default="auto",
        metadata={
            "help": "Liger layer kernels (GPU only); auto = on when liger-kernel is installed and CUDA is present."
        },
    )
    threads: int | None = field(default=None, metadata={"help": "torch CPU threads (unset = leave as is)."})
    harness: str | None = field(
        default=None,
        metadata={"help": "Target harness as pi@VERSION; must be the one the audit recorded (default: that one)."},
    )
    guard: dict | str | None = field(
        default=None,
        metadata={
            "help": "Health guard stop rules, a mapping: enabled, interval_s (30), gpu_temp_c (84), gpu_temp_readings "
            "(2), min_host_mem_gib (4), min_free_disk_gib (20). Unset keys keep those defaults."
        },
    )

    def _harnessfit_checks(self) -> None:
        for name in _AUTO_FIELDS:
            if getattr(self, name, None) == "auto":
                setattr(self, name, None)
        # transformers 5 renamed gradient_checkpointing to activation_checkpointing (the old name is an alias); both
        # unset = auto, decided here (GRPO) or by the fast path (SFT), which then sets both
        self.checkpointing_auto = self.activation_checkpointing is None and self.gradient_checkpointing is None
        if isinstance(self.liger, bool):  # YAML reads `on`/`off` as booleans
            self.liger = "on" if self.liger else "off"
        try:
            self.guard = GuardRules(**_as_dict(self.guard, "guard")).model_dump()
        except Exception as exc:  # noqa: BLE001 - pydantic or JSON: one message
            raise _pydantic_error(exc, "guard") from None
        if not self.use_cpu and not _cuda():
            # no GPU: say so to transformers, or several processes (accelerate launch on CPU) are each set up as one
            # single-process run (ParallelMode NOT_PARALLEL) instead of MULTI_CPU data parallel
            self.use_cpu = True
        if self.bf16 is None:  # auto: bf16 on a GPU; on a CPU it is ~10x slower than fp32
            self.bf16 = _cuda() and not self.use_cpu
        if self.lr_scheduler_type not in _scheduler_names():
            raise ValueError(
                f"unknown learning-rate scheduler {self.lr_scheduler_type!r}: use one of "
                f"{', '.join(_scheduler_names())}"
            )
        if self.lora_alpha < self.lora_r / 4:
            raise ValueError(
                f"lora_alpha={self.lora_alpha} is far below lora_r={self.lora_r} (scale < 0.25), so the "
                "adapter barely moves: set lora_alpha to about 2 x lora_r"
            )
        targets = self.lora_target_modules
        if (
            isinstance(targets, list)
            and len(targets) == 1
            and (targets[0] == "all-linear" or any(c in targets[0] for c in "\\*+?(|[^$"))
        ):
            # one value from a flag or a recipe: all-linear, or a regular expression over the full module names (PEFT
            # matches a string target with re.fullmatch; a list names module suffixes, which may hold dots)
            self.lora_target_modules = targets[0]

    @property
    def guard_rules(self) -> GuardRules:
        return GuardRules(**self.guard)

    def lora_targets(self) -> str | list[str]:
        """Modules that get adapters: ``lora_target_modules`` plus ``lora_extra_target_modules``."""
        extra = list(getattr(self, "lora_extra_target_modules", None) or [])
        if self.lora_target_modules == "all-linear" or not extra:
            return self.lora_target_modules
        return [*self.lora_target_modules, *[m for m in extra if m not in self.lora_target_modules]]


def _scheduler_names() -> list[str]:
    from transformers.trainer_utils import SchedulerType

    return [s.value for s in SchedulerType]


@dataclass
class HarnessfitSFTConfig(_HarnessfitFields, SFTConfig):
    """TRL's ``SFTConfig`` + harnessfit's fields; the defaults are the published SFT recipe: LoRA r 32 / alpha 64 /
    dropout 0.05 on all linear projections, NF4 where CUDA + bitsandbytes exist, batch 1 x grad-accum 8, lr 1e-4
    with linear decay, 1 epoch, seed 42, completion-only loss on the audit's masks, evaluation before training and
    every 50 steps."""

    # -- what to train on
    train_split: str = field(default="train", metadata={"help": "Tokenized split to train on."})
    eval_split: str = field(
        default="auto", metadata={"help": "Held-out split; auto = the first of validation/val/valid/test that exists."}
    )
    max_train_records: int | None = field(
        default=None,
        metadata={"help": "Use only the first N trainable training actions (demos); a chain is cut after the N-th."},
    )
    max_eval_records: int | None = field(
        default=None, metadata={"help": "Use only the first N trainable held-out actions."}
    )
    layout: Literal["chains", "records"] = field(
        default="chains",
        metadata={
            "help": "chains = train each audited chain as one sequence with every action supervised (the same per-token "
            "losses as per-action records, at a fraction of the tokens); records = every action its own record "
            "(context + action), the published per-action layout."
        },
    )
    loss_weighting: Literal["per_action", "per_token"] = field(
        default="per_action",
        metadata={
            "help": "per_action = each action weighs like one record of the per-action recipe (mean over its tokens, "
            "then mean over the actions of a step), so chains reproduce that objective; per_token = every supervised "
            "token weighs the same."
        },
    )
    # -- adapter
    lora_r: int = field(default=32, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=64, metadata={"help": "LoRA alpha (scale = alpha / r)."})
    lora_dropout: float = field(default=0.05, metadata={"help": "Dropout on the LoRA path."})
    # a default_factory: HfArgumentParser takes list defaults only from one
    lora_target_modules: list[str] | str = field(
        default_factory=lambda: "all-linear",
        metadata={"help": "Modules that get adapters; all-linear = every linear projection."},
    )
    # -- fast path
    records_per_row: int | None = field(
        default=None,
        metadata={
            "help": "Rows (chains, or records with layout records) packed per row with padding_free; auto = 4 on GPU, 1 "
            "on CPU. Gradient accumulation shrinks so an optimizer step still sees per_device_train_batch_size x "
            "gradient_accumulation_steps rows."
        },
    )
    # -- TRL / transformers defaults the published recipe changes
    learning_rate: float = field(default=1e-4, metadata={"help": "Peak learning rate (published recipe: 1e-4)."})
    per_device_train_batch_size: int = field(
        default=1,
        metadata={
            "help": "Rows (chains, or records with layout records) per micro-batch (published recipe: 1 record)."
        },
    )
    gradient_accumulation_steps: int = field(
        default=8, metadata={"help": "Micro-batches per optimizer step (published recipe: 8)."}
    )
    num_train_epochs: float = field(default=1.0, metadata={"help": "Passes over the training split."})
    max_record_length: int | None = field(
        default=None,
        metadata={
            "help": "Cap on an action's record length: actions whose record is longer are skipped (listed in "
            "skipped.jsonl; a chain is cut after its last action that fits); unset = train the audited lengths unchanged."
        },
    )
    max_length: int | None = field(
        default=None,
        metadata={
            "help": "Leave unset: audited records are never truncated (a cut record loses its end-of-turn token); "
            "use max_record_length to skip long ones."
        },
    )
    padding_free: bool = field(
        default=True, metadata={"help": "Pack a micro-batch into one row with per-record position ids (no padding)."}
    )
    trunk_cache: Literal["auto", "on", "off"] = field(
        default="auto",
        metadata={
            "help": "Compute the frozen lower layers (below the first adapted one) once per row and reuse them on later "
            "passes: the same loss and gradients, fewer layers per step. auto = on when rows are seen more than once "
            "by one process and the cache fits a quarter of free host memory (rows beyond that are recomputed)."
        },
    )
    completion_only_loss: bool | None = field(
        default=True, metadata={"help": "Loss on the audit's assistant masks only."}
    )
    activation_checkpointing: bool | None = field(
        default=None,
        metadata={
            "help": "Recompute activations in backward; auto = off when the activation-memory estimate fits 85 percent of "
            "the GPU, on otherwise; off on CPU."
        },
    )
    gradient_checkpointing: bool | None = field(
        default=None, metadata={"help": "Old name of activation_checkpointing (unset = auto)."}
    )
    bf16: bool | None = field(
        default=None, metadata={"help": "auto = bf16 on a GPU, fp32 on CPU (bf16 is ~10x slower there)."}
    )
    eval_strategy: str = field(default="steps", metadata={"help": "Evaluate every eval_steps (and before training)."})
    eval_steps: float | None = field(default=50, metadata={"help": "Evaluate on the held-out split every N steps."})
    eval_on_start: bool = field(default=True, metadata={"help": "Held-out loss before the first step."})
    save_steps: float = field(
        default=50, metadata={"help": "Checkpoint every N steps (resume continues from the newest)."}
    )
    save_total_limit: int | None = field(
        default=3, metadata={"help": "Checkpoints kept (the best one is always kept)."}
    )
    metric_for_best_model: str | None = field(
        default="eval_loss", metadata={"help": "The best checkpoint is the one with the lowest held-out loss."}
    )
    logging_steps: float = field(default=1, metadata={"help": "Log every N steps."})
    disable_tqdm: bool | None = field(
        default=True, metadata={"help": "TRL's tqdm bars off (a Rich progress bar shows on a terminal)."}
    )

    def __post_init__(self) -> None:
        self._harnessfit_checks()
        if isinstance(self.trunk_cache, bool):  # YAML reads `on`/`off` as booleans
            self.trunk_cache = "on" if self.trunk_cache else "off"
        if self.max_length is not None:
            raise ValueError(
                f"max_length={self.max_length} would truncate audited records (and cut their "
                "end-of-turn token): set max_record_length to skip records longer than that instead"
            )
        if self.save_steps > self.eval_steps and self.save_steps % self.eval_steps:
            raise ValueError(
                f"save_steps={self.save_steps:g} is not a multiple of eval_steps={self.eval_steps:g}: the "
                "best checkpoint can only be tracked at evaluated steps; make save_steps a multiple of "
                "eval_steps"
            )
        if self.records_per_row is not None:
            if self.records_per_row < 1:
                raise ValueError("records_per_row must be at least 1 (or auto)")
            if self.records_per_row > 1 and not self.padding_free:
                raise ValueError(
                    "records_per_row > 1 needs padding_free: true (rows are packed, not padded); "
                    "set padding_free: true or records_per_row: 1"
                )
            per_step = self.records_per_step()
            if per_step % self.records_per_row:
                raise ValueError(
                    f"records_per_row={self.records_per_row} does not divide per_device_train_batch_size x "
                    f"gradient_accumulation_steps={per_step}: pick a divisor so each optimizer step "
                    f"still sees {per_step} records"
                )
        super().__post_init__()

    def records_per_step(self) -> int:
        return self.per_device_train_batch_size * self.gradient_accumulation_steps


@dataclass
class HarnessfitGRPOConfig(_HarnessfitFields, GRPOConfig):
    """TRL's ``GRPOConfig`` + harnessfit's fields; the defaults are the published GRPO recipe: a group of 8, beta
    0.01, loss dapo, reward scaling per group, temperature 1.0, max completion 640 tokens with truncated
    completions masked out of the loss, lr 4e-6 cosine with a 40 percent floor, warmup 46 steps, grad-norm 0.5,
    weight decay 0.01, 2 epochs, LoRA r 64 / alpha 128 / dropout 0.1 on the attention projections."""

    # -- what to train on
    dataset_dir: str | None = field(
        default=None,
        metadata={
            "help": "Folder written by `harnessfit build` (decision_points/<split>.jsonl); default: the dataset the "
            "audit read (audit.json `dataset`)."
        },
    )
    train_split: str = field(default="train", metadata={"help": "Decision-point split to train on."})
    fidelity: Literal["byte", "content"] = field(
        default="content",
        metadata={
            "help": "Lowest fidelity tier of decision point to use: content = all (a state may hold a result rendered "
            "from output its agent altered in a documented way, named in the point's alterations); byte = only states "
            "whose every byte is known (the others are listed as skipped with reason fidelity_not_selected)."
        },
    )
    eval_split: str = field(
        default="auto",
        metadata={
            "help": "Held-out decision points scored before and after training (never trained on); auto = the first "
            "of validation/val/valid/test with usable points (a split without is said and skipped; with none, training "
            "goes on without the held-out before/after)."
        },
    )
    max_train_records: int | None = field(default=None, metadata={"help": "Use only the first N decision points."})
    max_prompt_length: int | None = field(
        default=None,
        metadata={
            "help": "Decision points whose rendered prompt is longer than this many tokens are skipped (listed in "
            "skipped.jsonl); unset = keep all."
        },
    )
    sft_adapter: str | None = field(
        default=None,
        metadata={
            "help": "Start from this SFT adapter (OUT/adapter of `harnessfit train sft`): GRPO continues training it "
            "(its rank and targets; the lora_* fields apply only when starting from the base) and the KL reference "
            "is a frozen copy of it."
        },
    )
    # -- adapter
    lora_r: int = field(default=64, metadata={"help": "LoRA rank (published recipe: 64)."})
    lora_alpha: int = field(default=128, metadata={"help": "LoRA alpha (published recipe: 128)."})
    lora_dropout: float = field(default=0.1, metadata={"help": "Dropout on the LoRA path (published recipe: 0.1)."})
    lora_target_modules: list[str] | str = field(
        default_factory=lambda: list(ATTENTION_PROJECTIONS),
        metadata={"help": "Modules that get adapters (published recipe: the attention projections)."},
    )
    lora_extra_target_modules: list[str] | None = field(
        default=None,
        metadata={
            "help": "More adapter targets, e.g. in_proj (Mamba layers) and the shared-expert projections of a hybrid "
            "MoE model."
        },
    )
    # -- rewards
    rewards: dict | str | None = field(
        default=None,
        metadata={
            "help": "Reward components and their weights, a mapping name: weight (see `harnessfit.rewards`: "
            "format, arguments_object, schema_valid, tool_active, clean_end, reference_match, length, judge). "
            "Unset = the verifiable set. The reward of a completion is the weighted mean of its score components "
            "plus its penalties; one unscorable component (the judge: None) makes the completion unscorable."
        },
    )
    format_error_reward: float = field(
        default=-1.0,
        metadata={
            "help": "What the format component scores for a broken <tool_call> block or a call written outside one."
        },
    )
    overlong_penalty: float = field(
        default=0.0,
        metadata={
            "help": "Subtracted from a completion that hits max_completion_length without ending its turn "
            "(over-long completions are counted either way)."
        },
    )
    judge: dict | str | None = field(
        default=None,
        metadata={
            "help": "LLM judge over an OpenAI-compatible endpoint, a mapping: base_url, model, api_key_env, "
            "timeout_s (60), concurrency (8), retries (1), max_tokens (400), context_chars (12000)."
        },
    )
    # -- held-out evaluation and the in-harness table
    heldout: bool = field(
        default=True,
        metadata={"help": "Score the eval_split decision points before and after training (greedy and best-of-G)."},
    )
    heldout_max_records: int | None = field(default=None, metadata={"help": "Use only the first N held-out points."})
    heldout_generations: int | None = field(
        default=None, metadata={"help": "Samples per held-out point for best-of-G; unset = num_generations."}
    )
    eval_suite: str | None = field(
        default=None,
        metadata={
            "help": "A task suite folder: after training, run it through the real Pi before and after (eval agent + "
            "eval compare) and put the table in the report. Unset = skip."
        },
    )
    eval_max_turns: int = field(default=3, metadata={"help": "Turn cap of the in-harness evaluation."})
    eval_max_seconds: float = field(default=120.0, metadata={"help": "Wall-clock cap per in-harness episode."})
    # -- TRL / transformers defaults the published recipe changes
    beta: float = field(default=0.01, metadata={"help": "KL coefficient to the reference policy (published: 0.01)."})
    max_completion_length: int | None = field(
        default=640, metadata={"help": "Longest completion in tokens (published: 640)."}
    )
    mask_truncated_completions: bool = field(
        default=True,
        metadata={
            "help": "Completions that hit max_completion_length without ending their turn are left out of the loss."
        },
    )
    learning_rate: float = field(default=4e-6, metadata={"help": "Peak learning rate (published: 4e-6)."})
    lr_scheduler_type: str = field(
        default="cosine_with_min_lr",
        metadata={"help": "Decay schedule (published: cosine with a floor, see lr_scheduler_kwargs)."},
    )
    lr_scheduler_kwargs: dict | str | None = field(
        default_factory=lambda: {"min_lr_rate": 0.4},
        metadata={"help": "Scheduler arguments (published: min_lr_rate 0.4, a floor at 40 percent of the peak)."},
    )
    warmup_steps: float = field(default=46, metadata={"help": "Warm-up steps (published: 46)."})
    max_grad_norm: float = field(default=0.5, metadata={"help": "Gradient-norm clip (published: 0.5)."})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay (published: 0.01)."})
    num_train_epochs: float = field(default=2.0, metadata={"help": "Passes over the decision points (published: 2)."})
    activation_checkpointing: bool | None = field(
        default=None, metadata={"help": "Recompute activations in backward; auto = on on a GPU, off on CPU."}
    )
    gradient_checkpointing: bool | None = field(
        default=None, metadata={"help": "Old name of activation_checkpointing (unset = auto)."}
    )
    bf16: bool | None = field(default=None, metadata={"help": "auto = bf16 on a GPU, fp32 on CPU."})
    use_vllm: bool | None = field(
        default=None,
        metadata={
            "help": "Generate with vLLM (vllm_mode colocate or server); auto = when vLLM imports and CUDA is present, "
            "transformers generation otherwise."
        },
    )
    save_steps: float = field(
        default=50, metadata={"help": "Checkpoint every N steps (resume continues from the newest)."}
    )
    save_total_limit: int | None = field(default=3, metadata={"help": "Checkpoints kept."})
    logging_steps: float = field(default=1, metadata={"help": "Log every N steps."})
    disable_tqdm: bool | None = field(
        default=True, metadata={"help": "TRL's tqdm bars off (a Rich progress bar shows on a terminal)."}
    )

    def __post_init__(self) -> None:
        self._harnessfit_checks()
        try:
            self.rewards = reward_weights(_as_dict(self.rewards, "rewards") or None)
        except Exception as exc:  # noqa: BLE001 - pydantic or our own check: one message
            raise _pydantic_error(exc, "rewards") from None
        try:
            self.judge = JudgeSettings(**_as_dict(self.judge, "judge")).model_dump()
        except Exception as exc:  # noqa: BLE001
            raise _pydantic_error(exc, "judge") from None
        if self.rewards.get("judge") and not (self.judge["base_url"] and self.judge["model"]):
            raise ValueError(
                "rewards.judge has a weight but judge.base_url / judge.model are unset: point judge at an "
                "OpenAI-compatible endpoint (judge: {base_url: http://HOST:PORT/v1, model: NAME}) or "
                "drop judge from rewards"
            )
        if self.num_generations is None or self.num_generations < 2:
            raise ValueError(
                f"num_generations={self.num_generations}: the advantage is relative to the group, so a "
                "group needs at least 2 completions; set num_generations: 2 or more"
            )
        if self.temperature <= 0:
            raise ValueError(
                f"temperature={self.temperature}: a group of greedy completions is all the same and "
                "gives no advantage; set temperature > 0 (published: 1.0)"
            )
        if self.format_error_reward > 0:
            raise ValueError(
                f"format_error_reward={self.format_error_reward} rewards broken tool calls; make it 0 or negative"
            )
        if self.overlong_penalty < 0:
            raise ValueError(f"overlong_penalty={self.overlong_penalty}: give the amount to subtract (>= 0)")
        if self.sft_adapter and not (Path(self.sft_adapter) / "adapter_config.json").is_file():
            raise ValueError(
                f"sft_adapter {self.sft_adapter} is not an adapter folder (no adapter_config.json): "
                "point it at OUT/adapter of `harnessfit train sft`"
            )
        if self.use_vllm is None:  # TRL runs vLLM in this process (colocate) or its own server: it must import here
            import importlib.util

            self.use_vllm = vllm_available() and importlib.util.find_spec("vllm") is not None
        elif self.use_vllm:
            import importlib.util

            if importlib.util.find_spec("vllm") is None:
                raise ValueError(
                    "use_vllm: true but vLLM is not installed: pip install vllm, or set use_vllm: auto "
                    "(transformers generation)"
                )
        if self.checkpointing_auto:
            self.activation_checkpointing = _cuda() and not self.use_cpu
        super().__post_init__()  # TRL checks the generation batch holds whole groups


# -- reading a recipe ---------------------------------------------------------------------------------------------


class HarnessfitParser(TrlParser):
    """TRL's parser whose mistakes are one-line ``UserError``s instead of argparse's usage dump and exit."""

    def error(self, message: str):  # argparse calls this for a bad flag or value
        raise UserError(f"bad recipe value or flag: {message.replace('argument ', '', 1)} (see --help)")


def _read_mapping(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise UserError(f"recipe not found: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise UserError(f"cannot parse recipe {path}: {str(exc).splitlines()[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"recipe {path} must be a mapping of field: value")
    return data


def _check_keys(cls: type, data: dict[str, Any], where: str) -> None:
    known = {f.name for f in fields(cls)}
    for key in data:
        if key in known:
            continue
        if key in RENAMED_KEYS and RENAMED_KEYS[key] in known:
            raise UserError(
                f"recipe key {key!r} in {where} is now {RENAMED_KEYS[key]!r} (the configs use TRL's names): rename it"
            )
        close = _closest(key, known, {f.name for f in fields(GRPOConfig if issubclass(cls, GRPOConfig) else SFTConfig)})
        hint = f" (did you mean {close!r}?)" if close else ""
        raise UserError(
            f"unknown recipe key {key!r} in {where}: not a field of {cls.__name__}{hint}; "
            f"`harnessfit train {_kind(cls)} --help` lists them"
        )


def _closest(key: str, known: set[str], base: set[str]) -> str | None:
    """The field a mistyped key most likely meant; harnessfit's own fields get a small head start (a recipe names
    them more often than, say, TRL's ``local_rank``)."""

    def score(name: str) -> float:
        return difflib.SequenceMatcher(None, key, name).ratio() + (0.1 if name not in base else 0.0)

    best = max(sorted(known), key=score)
    return best if score(best) >= 0.7 else None


def _kind(cls: type) -> str:
    if getattr(cls, "command", None):  # train rl's config extends GRPOConfig too
        return str(cls.command)
    return "grpo" if issubclass(cls, GRPOConfig) else "sft"


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    for key in _PATH_FIELDS:
        val = data.get(key)
        if isinstance(val, str) and not Path(val).is_absolute() and not Path(val).exists() and (base / val).exists():
            data[key] = str((base / val).resolve())


def load_config(cls: type, path: Path | str | None, args: Sequence[str] = (), **overrides: Any):
    """``cls`` (``HarnessfitSFTConfig`` or ``HarnessfitGRPOConfig``) from a recipe file, then ``overrides``
    (non-None keyword values), then command-line ``args`` (``--field value``) — later ones win. Every mistake is a
    one-line ``UserError`` naming the field."""
    data: dict[str, Any] = {}
    where = "(command line)"
    if path is not None:
        path = Path(path)
        data = _read_mapping(path)
        where = str(path)
        _check_keys(cls, data, where)
        _resolve_paths(data, path.parent)
    extra = {k: v for k, v in overrides.items() if v is not None}
    _check_keys(cls, extra, "the overrides")
    data.update(extra)
    if "output_dir" in data and "output_dir" not in extra:
        raise UserError(f"output_dir in {where}: the run folder is set with --out (checkpoints go to OUT/checkpoints)")
    for key in _AUTO_FIELDS:  # "auto" = leave unset; the field's None default means "decide from the machine"
        if data.get(key) == "auto":
            data.pop(key)
    for key in _DICT_FIELDS:  # a mapping travels as JSON text (the field's command-line form) and is read back
        if isinstance(data.get(key), dict):
            data[key] = json.dumps(data[key])
    parser = HarnessfitParser(cls)
    parser.set_defaults_with_config(**data)
    try:
        (cfg,) = parser.parse_args_into_dataclasses(args=list(args))
    except UserError:
        raise
    except ValueError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if first.startswith("Some specified arguments are not used"):
            raise UserError(
                f"unknown flag(s) {first.split(':', 1)[-1].strip()}: see `harnessfit train {_kind(cls)} --help`"
            ) from None
        raise UserError(f"bad recipe {where}: {first}") from None
    cfg.recipe_record = {"file": str(path) if path is not None else None, "set": _plain(data), "flags": list(args)}
    return cfg


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, val in data.items():
        if key in _DICT_FIELDS and isinstance(val, str):
            try:
                val = json.loads(val)
            except ValueError:
                pass
        out[key] = val
    return out


def load_sft_config(path: Path | str | None, args: Sequence[str] = (), **overrides: Any) -> HarnessfitSFTConfig:
    """``HarnessfitSFTConfig`` from a recipe (see ``load_config``)."""
    return load_config(HarnessfitSFTConfig, path, args, **overrides)


def load_grpo_config(path: Path | str | None, args: Sequence[str] = (), **overrides: Any) -> HarnessfitGRPOConfig:
    """``HarnessfitGRPOConfig`` from a recipe (see ``load_config``)."""
    return load_config(HarnessfitGRPOConfig, path, args, **overrides)


def config_help(cls: type, summary: str | None = None) -> str:
    """``--help`` text: what the command does (``summary``), then every field with its help metadata (TRL's and
    transformers' included)."""
    parser = HarnessfitParser(
        cls,
        prog=f"harnessfit train {_kind(cls)} RECIPE",
        description=(f"{summary.strip()} " if summary else "") + f"Fields of {cls.__name__} "
        "(set them in the recipe or as --flags; flags win). Harnessfit's own options: --out "
        "DIR, --resume.",
    )
    return parser.format_help()


def parse_cli(cls: type, recipe: Path | None, args: Sequence[str], *, summary: str | None = None, **overrides: Any):
    """The CLI's entry: ``--help`` anywhere prints ``summary`` (the command's description) and the field list and
    exits; else ``load_config``."""
    if "--help" in args or "-h" in args or str(recipe) in ("--help", "-h"):  # click hands a lone flag over as RECIPE
        import typer

        typer.echo(config_help(cls, summary))
        raise typer.Exit(0)
    if recipe is None:
        raise UserError(
            f"give a recipe: `harnessfit train {_kind(cls)} RECIPE [--field value ...]` (examples in examples/recipes/)"
        )
    return load_config(cls, recipe, args, **overrides)
