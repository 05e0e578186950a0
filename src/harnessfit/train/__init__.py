"""train stage: LoRA/QLoRA SFT on the audited tokenized set and GRPO on the build's decision points (TRL + PEFT),
with a health guard, resumable checkpoints, a fast path (padding-free packing, flex attention, Liger, no gradient
checkpointing when it fits), rewards (harness-verifiable and an LLM judge), reports, and merging an adapter into
its base model for serving.

The configs extend TRL's (``HarnessfitSFTConfig(SFTConfig)``, ``HarnessfitGRPOConfig(GRPOConfig)``) and are read
from a recipe plus flags by ``load_sft_config`` / ``load_grpo_config``.

Public surface (imported lazily: ``import harnessfit.train`` stays cheap, the guard process imports nothing heavy):
``HarnessfitSFTConfig``, ``HarnessfitGRPOConfig``, ``load_sft_config``, ``load_grpo_config``, ``train_sft``,
``TrainResult``, ``train_grpo``, ``GRPOResult``, ``merge_adapter``, ``HealthGuard``, ``ScriptedReadings``,
``GuardRules``.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "HarnessfitSFTConfig",
    "HarnessfitGRPOConfig",
    "load_sft_config",
    "load_grpo_config",
    "train_sft",
    "TrainResult",
    "train_grpo",
    "GRPOResult",
    "merge_adapter",
    "HealthGuard",
    "ScriptedReadings",
    "GuardRules",
]

_WHERE = {
    "HarnessfitSFTConfig": "config",
    "HarnessfitGRPOConfig": "config",
    "load_sft_config": "config",
    "load_grpo_config": "config",
    "train_sft": "sft",
    "TrainResult": "sft",
    "train_grpo": "grpo",
    "GRPOResult": "grpo",
    "merge_adapter": "merge",
    "HealthGuard": "guard",
    "ScriptedReadings": "guard",
    "GuardRules": "guard_rules",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"harnessfit.train.{_WHERE[name]}"), name)
    raise AttributeError(name)
