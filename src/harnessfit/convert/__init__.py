"""convert stage: read traces, map them to the harness's wire format, gate them, and keep a ledger.

Public surface:

- ``iter_convert(inputs, card, *, workers=1, formats=None)`` → Conversation | Rejection, deterministic order;
- ``iter_unit_results(...)`` → per-unit ``UnitResult`` (label, format, bytes, read count, outputs);
- ``iter_encoded_units(...)`` / ``encode_unit`` → the same results as the bytes ``convert`` writes;
- ``convert(inputs, out_dir, card, *, workers, formats)`` → ``ConvertSummary`` (writes conversations.jsonl,
  ledger.jsonl, ledger_summary.md, accounting.json);
- ``to_conversation(trajectory, card)`` → one trajectory through its format's mapping and the gates;
  ``convert_trajectory`` → the same with its exact prefix and the fate of every source call (``Outcome``);
- ``ConvertPolicy`` / ``DEFAULT_UI_TOOLS``: which UI-only calls are dropped, and when (``convert.policy``);
- ``YieldReport`` / ``write_yield``: calls read → labels → dropped → lost, per file and format (``yield.json``);
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
from harnessfit.convert.policy import DEFAULT_UI_TOOLS, ConvertPolicy
from harnessfit.convert.runner import (
    EncodedUnit,
    UnitResult,
    encode_unit,
    iter_convert,
    iter_encoded_units,
    iter_unit_results,
)
from harnessfit.convert.validate import validate_conversation
from harnessfit.convert.wire import Outcome, convert_trajectory, to_conversation
from harnessfit.convert.yields import YieldReport, write_yield

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
    "convert_trajectory",
    "Outcome",
    "ConvertPolicy",
    "DEFAULT_UI_TOOLS",
    "YieldReport",
    "write_yield",
    "Gate",
    "GATES",
    "validate_conversation",
]
