"""convert stage: read traces, map them to the harness's wire format, gate them, and keep a ledger.

Public surface (imported lazily so that ``harnessfit.convert.rejection`` stays cheap and cycle-free)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Conversation",
    "ConversationMeta",
    "Reason",
    "Rejection",
]

_LAZY: dict[str, str] = {
    "Conversation": "harnessfit.convert.conversation",
    "ConversationMeta": "harnessfit.convert.conversation",
    "Reason": "harnessfit.convert.rejection",
    "Rejection": "harnessfit.convert.rejection",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harnessfit.convert' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
