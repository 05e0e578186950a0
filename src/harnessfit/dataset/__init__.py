"""dataset stage: redact → dedup → grouped split → export, with ledger, dataset card, manifest and ``verify``.

Public surface: ``BuildConfig``/``load_build_config`` (config), ``build_dataset``/``run_build`` (build),
``verify_dataset`` (byte-for-byte check), ``Redactor`` (redaction), ``Deduper`` (dedup), ``assign_splits``
(grouped splits), ``sft_records``/``decision_points`` (record shapes; the record types themselves,
``SFTRecord``/``DecisionPoint``, are nouns in ``harnessfit.core.records``). Imported lazily (import cost).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "BuildConfig",
    "load_build_config",
    "build_dataset",
    "run_build",
    "verify_dataset",
    "Redactor",
    "Deduper",
    "assign_splits",
    "sft_records",
    "decision_points",
]

_LAZY = {
    "BuildConfig": "config",
    "load_build_config": "config",
    "build_dataset": "build",
    "run_build": "build",
    "verify_dataset": "verify",
    "Redactor": "redact",
    "Deduper": "dedup",
    "assign_splits": "split",
    "sft_records": "exports",
    "decision_points": "exports",
}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'harnessfit.dataset' has no attribute {name!r}")
    return getattr(importlib.import_module(f"harnessfit.dataset.{mod}"), name)
