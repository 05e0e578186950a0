"""train stage: LoRA/QLoRA SFT on the audited tokenized set (TRL + PEFT), with a health guard, resumable
checkpoints, a fast path (padding-free packing, flex attention, Liger, no gradient checkpointing when it fits),
a training report, and merging an adapter into its base model for serving.

Public surface (imported lazily: ``import harnessfit.train`` stays cheap, the guard process imports nothing heavy):
``TrainRecipe``, ``load_recipe``, ``train_sft``, ``TrainResult``, ``merge_adapter``, ``HealthGuard``,
``ScriptedReadings``.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["TrainRecipe", "load_recipe", "train_sft", "TrainResult", "merge_adapter", "HealthGuard",
           "ScriptedReadings", "GuardRules"]

_WHERE = {
    "TrainRecipe": "recipe", "load_recipe": "recipe", "train_sft": "sft", "TrainResult": "sft",
    "merge_adapter": "merge", "HealthGuard": "guard", "ScriptedReadings": "guard", "GuardRules": "guard_rules",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"harnessfit.train.{_WHERE[name]}"), name)
    raise AttributeError(name)
