"""convert stage: read traces, map them to the harness's wire format, gate them, and keep a ledger.

Public surface:

- ``iter_convert(inputs, card, *, workers=1, formats=None)`` → Conversation | Rejection, deterministic order;
- ``iter_unit_results(...)`` → per-unit ``UnitResult`` (label, format, bytes, read count, outputs);
- ``iter_encoded_units(...)`` / ``encode_unit`` → the same results as the bytes ``convert`` writes;
- ``convert(inputs, out_dir, card, *, workers, formats)`` → ``ConvertSummary`` (writes conversations.jsonl,
  ledger.jsonl, ledger_summary.md, accounting.json);
- ``to_conversation(trajectory, card)`` → one trajectory through its format's mapping and the gates;
- ``Accounting`` / ``write_ledger_summary`` for the per-file identity ``read = accepted + rejected``;
- ``Gate`` / ``GATES``: the checks, one class each, in the order that decides a rejection's reason;
- ``validate_conversation``: re-check a conversation against the card.

The nouns it produces (``Conversation``, ``Rejection``, ``Reason``) live in ``harnessfit.core``.
"""

from __future__ import annotations

from harnessfit.convert.gates import GATES, Gate
from harnessfit.convert.ledger import (
    Accounting,
    AccountingError,
    ConvertSummary,
    FileAccount,
    convert,
    write_ledger_summary,
)
from harnessfit.convert.runner import (
    EncodedUnit,
    UnitResult,
    encode_unit,
    iter_convert,
    iter_encoded_units,
    iter_unit_results,
)
from harnessfit.convert.validate import validate_conversation
from harnessfit.convert.wire import to_conversation

__all__ = [
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
    "validate_conversation",
]
