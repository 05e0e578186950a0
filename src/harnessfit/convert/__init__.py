"""convert stage: read traces, map them to the harness's wire format, gate them, and keep a ledger.

Public surface (imported lazily so ``harnessfit.convert.rejection`` stays cheap and import cycles never form):

- ``iter_convert(inputs, card, *, workers=1, formats=None)`` → Conversation | Rejection, deterministic order;
- ``iter_unit_results(...)`` → per-unit ``UnitResult`` (label, format, bytes, read count, outputs);
- ``convert(inputs, out_dir, card, *, workers, formats)`` → ``ConvertSummary`` (writes conversations.jsonl,
  ledger.jsonl, ledger_summary.md, accounting.json);
- ``to_conversation(trajectory, card)`` → one trajectory through the mappings and gates;
- ``Accounting`` / ``write_ledger_summary`` for stages that keep their own ledgers (dataset build);
- ``GATES`` / ``GATE_ORDER`` / ``Gate``; nouns ``Conversation``, ``ConversationMeta``, ``Rejection``, ``Reason``.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Conversation",
    "ConversationMeta",
    "Reason",
    "Rejection",
    "iter_convert",
    "iter_unit_results",
    "UnitResult",
    "iter_encoded_units",
    "EncodedUnit",
    "encode_unit",
    "convert",
    "ConvertSummary",
    "Accounting",
    "AccountingError",
    "FileAccount",
    "write_ledger_summary",
    "to_conversation",
    "Gate",
    "GATES",
    "GATE_ORDER",
    "validate_conversation",
]

_LAZY: dict[str, str] = {
    "Conversation": "harnessfit.convert.conversation",
    "ConversationMeta": "harnessfit.convert.conversation",
    "Reason": "harnessfit.convert.rejection",
    "Rejection": "harnessfit.convert.rejection",
    "iter_convert": "harnessfit.convert.runner",
    "iter_unit_results": "harnessfit.convert.runner",
    "UnitResult": "harnessfit.convert.runner",
    "iter_encoded_units": "harnessfit.convert.runner",
    "EncodedUnit": "harnessfit.convert.runner",
    "encode_unit": "harnessfit.convert.runner",
    "convert": "harnessfit.convert.ledger",
    "ConvertSummary": "harnessfit.convert.ledger",
    "Accounting": "harnessfit.convert.ledger",
    "AccountingError": "harnessfit.convert.ledger",
    "FileAccount": "harnessfit.convert.ledger",
    "write_ledger_summary": "harnessfit.convert.ledger",
    "to_conversation": "harnessfit.convert.wire",
    "Gate": "harnessfit.convert.gates",
    "GATES": "harnessfit.convert.gates",
    "GATE_ORDER": "harnessfit.convert.gates",
    "validate_conversation": "harnessfit.convert.validate",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harnessfit.convert' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
