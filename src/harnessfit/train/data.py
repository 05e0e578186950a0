"""Reading the audited tokenized set exactly as the audit wrote it (no re-rendering, no re-tokenizing).

The audit verified every mask; training must see the same token ids. Rows that cannot be trained (mask length
differs from the ids, nothing supervised, longer than the recipe's cap) are not dropped silently: each becomes a
``SkippedRecord`` that is written to ``skipped.jsonl`` and counted in the report.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import pyarrow.parquet as pq
from datasets import Dataset
from pydantic import BaseModel

from harnessfit.errors import UserError
from harnessfit.core.jsonio import loads

__all__ = ["SkipReason", "SkippedRecord", "TokenizedSplit", "find_eval_split", "load_meta", "load_split"]

EVAL_SPLIT_NAMES = ("validation", "val", "valid", "test")
REQUIRED_COLUMNS = ("id", "input_ids", "assistant_masks")


class SkipReason(StrEnum):
    """Why a tokenized row was not trained on (closed set)."""

    mask_length_mismatch = "mask_length_mismatch"
    nothing_supervised = "nothing_supervised"
    over_max_length = "over_max_length"
    empty = "empty"
    source_not_selected = "source_not_selected"


class SkippedRecord(BaseModel):
    """One tokenized row left out of training, with the reason (the training stage's ledger)."""

    record_id: str
    split: str
    reason: SkipReason
    detail: str


class TokenizedSplit(BaseModel):
    """A split ready for TRL: the dataset (``input_ids`` + ``assistant_masks``), ids, lengths and what was skipped."""

    model_config = {"arbitrary_types_allowed": True}

    name: str
    dataset: Dataset
    ids: list[str]
    lengths: list[int]
    n_supervised: int
    skipped: list[SkippedRecord]


def load_meta(audit_dir: Path) -> dict:
    path = audit_dir / "tokenized" / "meta.json"
    if not path.is_file():
        raise UserError(f"no tokenized set at {audit_dir}: expected tokenized/meta.json (run `harnessfit audit` first)")
    return loads(path.read_bytes())


def find_eval_split(audit_dir: Path, wanted: str) -> str | None:
    """The held-out split's name: ``wanted`` if given, else the first conventional name that exists."""
    tok = audit_dir / "tokenized"
    if wanted != "auto":
        if not (tok / f"{wanted}.parquet").is_file():
            raise UserError(f"eval split {wanted!r} not found in {tok} (have: {_have(tok)})")
        return wanted
    for name in EVAL_SPLIT_NAMES:
        if (tok / f"{name}.parquet").is_file():
            return name
    return None


def _have(tok: Path) -> str:
    return ", ".join(sorted(p.stem for p in tok.glob("*.parquet"))) or "nothing"


def load_split(audit_dir: Path, split: str, *, max_records: int | None = None,
               max_length: int | None = None, sources: list[str] | None = None) -> TokenizedSplit:
    """Load one split in file order, keeping ``input_ids`` and ``assistant_masks`` unchanged.

    ``sources`` keeps only rows whose ``source`` column (the trace format) is listed; the others are recorded as
    skipped with ``source_not_selected``."""
    path = audit_dir / "tokenized" / f"{split}.parquet"
    if not path.is_file():
        raise UserError(f"split {split!r} not found in {audit_dir / 'tokenized'} (have: {_have(path.parent)})")
    table = pq.read_table(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise UserError(f"{path} lacks columns {missing}: it was not written by `harnessfit audit`")
    ids = table.column("id").to_pylist()
    all_ids = table.column("input_ids").to_pylist()
    all_masks = table.column("assistant_masks").to_pylist()
    all_sources = (table.column("source").to_pylist() if "source" in table.column_names
                   else [None] * len(ids))
    rows_ids: list[list[int]] = []
    rows_masks: list[list[int]] = []
    kept: list[str] = []
    skipped: list[SkippedRecord] = []
    for rid, ids_, mask, source in zip(ids, all_ids, all_masks, all_sources, strict=True):
        reason = detail = None
        if sources is not None and source not in sources:
            reason, detail = SkipReason.source_not_selected, f"source {source!r} not in {sources}"
        elif not ids_:
            reason, detail = SkipReason.empty, "no tokens"
        elif mask is None or len(mask) != len(ids_):
            reason, detail = SkipReason.mask_length_mismatch, f"{len(ids_)} ids, {0 if mask is None else len(mask)} mask"
        elif not any(mask):
            reason, detail = SkipReason.nothing_supervised, "assistant mask is all zero"
        elif max_length is not None and len(ids_) > max_length:
            reason, detail = SkipReason.over_max_length, f"{len(ids_)} tokens > max_length {max_length}"
        if reason is not None:
            skipped.append(SkippedRecord(record_id=str(rid), split=split, reason=reason, detail=detail))
            continue
        if max_records is not None and len(kept) >= max_records:
            break
        kept.append(str(rid))
        rows_ids.append([int(t) for t in ids_])
        rows_masks.append([int(m) for m in mask])
    if not kept:
        raise UserError(f"split {split!r} in {audit_dir} has no trainable records ({len(skipped)} skipped)")
    ds = Dataset.from_dict({"input_ids": rows_ids, "assistant_masks": rows_masks})
    return TokenizedSplit(name=split, dataset=ds, ids=kept, lengths=[len(r) for r in rows_ids],
                          n_supervised=sum(sum(m) for m in rows_masks), skipped=skipped)
