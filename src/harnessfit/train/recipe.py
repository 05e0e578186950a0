"""The training recipe: one YAML/TOML file that says what to train on and how.

Defaults are the published recipe (LoRA r 32 / alpha 64 / dropout 0.05 on all linear projections, NF4 double-quant
where CUDA + bitsandbytes exist, batch 1 x grad-accum 8, lr 1e-4 with decay, 1 epoch, seed 42, completion-only loss,
evaluation before training and every 50 steps). The trainer arguments are a subclass of TRL's ``SFTConfig``
(``RecipeSFTConfig``) built from the recipe, so everything TRL documents still applies.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from trl import SFTConfig

from harnessfit.errors import UserError
from harnessfit.train.guard_rules import GuardRules

__all__ = ["GuardRules", "TrainRecipe", "RecipeSFTConfig", "load_recipe"]

Switch = Literal["auto", "on", "off"]


class TrainRecipe(BaseModel):
    """Everything a training run needs, with the published recipe as defaults.

    Kept as a pydantic model (not the trainer's dataclass) so it validates on load with one clear message, can be
    written back next to the outputs, and hashed for provenance; ``sft_config`` turns it into TRL arguments.
    """

    model_config = ConfigDict(extra="forbid")

    # inputs
    audit_dir: str | None = Field(
        None, description="Folder written by `harnessfit audit DATASET` (tokenized/ + tokenizer/); the audit's default "
        "output is DATASET-audit beside the dataset. Required: set it here or pass --audit-dir.")
    model: str | None = Field(None, description="Base model spec (alias, local folder, HF id); default: the audit's model.")
    train_split: str = Field("train", description="Tokenized split to train on.")
    eval_split: str = Field("auto", description="Held-out split; 'auto' = first of validation/val/valid/test present.")
    max_train_records: int | None = Field(
        None, ge=1, description="Use only the first N trainable training actions (demos); a chain is cut after the N-th.")
    max_eval_records: int | None = Field(None, ge=1, description="Use only the first N trainable held-out actions.")
    layout: Literal["chains", "records"] = Field(
        "chains", description="'chains' = train each audited chain as one sequence with every action supervised "
        "(the same per-token losses as per-action records, at a fraction of the tokens); 'records' = expand every "
        "action into its own record (context + action), the published per-action layout.")
    loss_weighting: Literal["per_action", "per_token"] = Field(
        "per_action", description="'per_action' = each action weighs like one record of the per-action recipe (mean "
        "over its tokens, then mean over the actions of a step), so chains reproduce that objective; 'per_token' = "
        "every supervised token weighs the same.")
    sources: list[str] | None = Field(
        None, description="Train and evaluate only on records from these trace formats (e.g. [pi]); None = all. "
        "The others are listed in skipped.jsonl as source_not_selected.")
    # adapter
    lora_r: int = Field(32, ge=1, description="LoRA rank.")
    lora_alpha: int = Field(64, ge=1, description="LoRA alpha (scale = alpha / r).")
    lora_dropout: float = Field(0.05, ge=0, lt=1, description="Dropout on the LoRA path.")
    target_modules: str | list[str] = Field("all-linear", description="Modules that get adapters; 'all-linear' = every linear projection.")
    quantization: Literal["auto", "nf4", "none"] = Field(
        "auto", description="'auto' = NF4 double-quant (QLoRA) where CUDA + bitsandbytes exist, plain LoRA otherwise.")
    dtype: Literal["auto", "bf16", "fp32"] = Field("auto", description="Compute dtype; 'auto' = bf16 on GPU, fp32 on CPU.")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="Where to train; 'auto' = CUDA when present.")
    # optimisation
    batch_size: int = Field(1, ge=1, description="Rows (chains, or records with layout: records) per micro-batch "
                            "(published recipe: 1 record).")
    grad_accum: int = Field(8, ge=1, description="Micro-batches per optimizer step (published recipe: 8).")
    learning_rate: float = Field(1e-4, gt=0, description="Peak learning rate.")
    lr_scheduler: str = Field("linear", description="Decay schedule (transformers name: linear, cosine, ...).")
    warmup_ratio: float = Field(0.0, ge=0, lt=1, description="Fraction of steps spent warming up.")
    epochs: float = Field(1.0, gt=0, description="Passes over the training split.")
    max_steps: int = Field(-1, description="Stop after this many optimizer steps (-1 = use epochs).")
    seed: int = Field(42, description="Seed for data order, LoRA init and dropout.")
    max_length: int | None = Field(
        None, ge=16, description="Cap on an action's record length: actions whose record is longer are skipped (a "
        "chain is cut after its last action that fits); None = train the audited lengths unchanged.")
    # evaluation / checkpoints
    eval_every: int = Field(50, ge=1, description="Evaluate on the held-out split every N optimizer steps (and before training).")
    save_every: int = Field(50, ge=1, description="Checkpoint every N optimizer steps (resume continues from the newest).")
    save_total_limit: int = Field(3, ge=1, description="Checkpoints kept (the best one is always kept).")
    logging_steps: int = Field(1, ge=1, description="Log training loss every N steps.")
    # fast path
    padding_free: bool = Field(True, description="Pack a micro-batch into one row with per-record position ids (no padding).")
    records_per_row: int | Literal["auto"] = Field(
        "auto", description="Rows (chains or records) packed per row with padding_free; 'auto' = 4 on GPU, 1 on CPU. "
        "Grad-accum shrinks so rows per optimizer step stay batch_size x grad_accum.")
    attn_implementation: str = Field("auto", description="'auto' = flex_attention on GPU, sdpa on CPU; or any transformers name.")
    gradient_checkpointing: Switch = Field("auto", description="'auto' = off when the memory estimate fits the device, on otherwise.")
    liger: Switch = Field("auto", description="Liger kernels (GPU only); 'auto' = on when liger-kernel is installed and CUDA is present.")
    torch_compile: Switch = Field("auto", description="torch.compile the model; 'auto' = off (flex attention compiles its own kernel).")
    threads: int | None = Field(None, ge=1, description="torch CPU threads (None = leave as is).")
    # guard
    guard: GuardRules = Field(default_factory=GuardRules, description="Health guard stop rules.")

    @field_validator("lr_scheduler")
    @classmethod
    def _known_scheduler(cls, value: str) -> str:
        from transformers.trainer_utils import SchedulerType

        names = [s.value for s in SchedulerType]
        if value not in names:
            raise ValueError(f"unknown learning-rate scheduler {value!r}: use one of {', '.join(names)}")
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> "TrainRecipe":
        if self.lora_alpha < self.lora_r / 4:
            raise ValueError(f"lora_alpha={self.lora_alpha} is far below lora_r={self.lora_r} (scale < 0.25), so the "
                             "adapter barely moves: set lora_alpha to about 2 x lora_r")
        if self.save_every % self.eval_every and self.save_every > self.eval_every:
            raise ValueError(f"save_every={self.save_every} is not a multiple of eval_every={self.eval_every}: the best "
                             "checkpoint can only be tracked at evaluated steps; make save_every a multiple of eval_every")
        if isinstance(self.records_per_row, int):
            if self.records_per_row > 1 and not self.padding_free:
                raise ValueError("records_per_row > 1 needs padding_free: true (rows are packed, not padded); "
                                 "set padding_free: true or records_per_row: 1")
            per_step = self.batch_size * self.grad_accum
            if per_step % self.records_per_row:
                raise ValueError(f"records_per_row={self.records_per_row} does not divide batch_size x grad_accum="
                                 f"{per_step}: pick a divisor so each optimizer step still sees {per_step} records")
        if self.quantization == "nf4" and self.device == "cpu":
            pass  # bitsandbytes NF4 does run on CPU (slowly); allowed on purpose for testing the QLoRA path
        return self

    def records_per_step(self) -> int:
        return self.batch_size * self.grad_accum

    def with_overrides(self, **overrides: Any) -> "TrainRecipe":
        """A copy with some fields replaced (CLI flags), validated again."""
        data = self.model_dump()
        data.update({k: v for k, v in overrides.items() if v is not None})
        return _validate(data, "overrides")


def _validate(data: dict[str, Any], where: str) -> TrainRecipe:
    try:
        return TrainRecipe.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "recipe"
        raise UserError(f"bad recipe ({where}): {loc}: {first['msg'].removeprefix('Value error, ')}") from None


def load_recipe(path: Path | str, **overrides: Any) -> TrainRecipe:
    """Read a recipe from YAML or TOML; ``overrides`` (non-None) replace fields. Relative ``audit_dir`` and local
    ``model`` paths are taken relative to the recipe file's folder when they exist there."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"recipe not found: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise UserError(f"cannot parse recipe {path}: {str(exc).splitlines()[0]}") from None
    data = dict(data or {})
    if not isinstance(data, dict):
        raise UserError(f"recipe {path} must be a mapping of field: value")
    data.update({k: v for k, v in overrides.items() if v is not None})
    for key in ("audit_dir", "model"):
        val = data.get(key)
        if isinstance(val, str) and not Path(val).is_absolute() and (path.parent / val).exists() and not Path(val).exists():
            data[key] = str((path.parent / val).resolve())
    return _validate(data, str(path))


@dataclass
class RecipeSFTConfig(SFTConfig):
    """TRL's ``SFTConfig`` with the published recipe's defaults, plus the recipe that produced it (for provenance)."""

    learning_rate: float = field(default=1e-4, metadata={"help": "Published recipe: 1e-4 with linear decay."})
    gradient_accumulation_steps: int = field(default=8, metadata={"help": "Published recipe: batch 1 x 8."})
    per_device_train_batch_size: int = field(default=1, metadata={"help": "Published recipe: 1."})
    num_train_epochs: float = field(default=1.0, metadata={"help": "Published recipe: 1 epoch."})
    seed: int = field(default=42, metadata={"help": "Published recipe: 42."})
    eval_strategy: str = field(default="steps", metadata={"help": "Evaluate every eval_steps."})
    eval_steps: float = field(default=50, metadata={"help": "Published recipe: every 50 steps."})
    eval_on_start: bool = field(default=True, metadata={"help": "Held-out loss before the first step."})
    report_to: Any = field(default="tensorboard", metadata={"help": "TensorBoard events beside the metrics JSONL."})
    harnessfit_recipe: dict | None = field(default=None, metadata={"help": "The TrainRecipe these arguments came from."})
