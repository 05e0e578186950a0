"""Reading the audited tokenized set exactly as the audit wrote it (no re-rendering, no re-tokenizing).

The audit verified every mask; training must see the same token ids. A row is a **chain** (``harnessfit.tokens
.chains``): one sequence holding several actions, each supervised on its own span, where the first
``action_lengths[i]`` tokens are action ``i``'s own per-action record. So both layouts come from the same rows:

- ``chains`` (default): each row as it is, cut after its last action whose record fits ``max_length``;
- ``records``: each action as its own record, ``input_ids[:length]`` with only that action supervised (what the
  published per-action recipe trains on).

Either way exactly the same actions are trained. Actions that cannot be trained (mask length differs from the
ids, nothing supervised, longer than the recipe's cap, source not selected) are not dropped silently: each becomes
a ``SkippedRecord`` that is written to ``skipped.jsonl`` and counted in the report. Rows written by format 1 of
the audit (one action per row, no ``action_*`` columns) read as one-action chains.
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum
from pathlib import Path
from typing import Literal

import pyarrow.parquet as pq
from datasets import Dataset
from pydantic import BaseModel

from harnessfit.core.jsonio import loads
from harnessfit.core.records import record_fidelity
from harnessfit.errors import UserError

__all__ = [
    "Layout",
    "SkipReason",
    "SkippedRecord",
    "TokenizedSplit",
    "find_eval_splits",
    "load_meta",
    "load_split",
    "sft_fidelity",
]

Layout = Literal["chains", "records"]
EVAL_SPLIT_NAMES = ("validation", "val", "valid", "test")
REQUIRED_COLUMNS = ("id", "input_ids", "assistant_masks")
ACTION_COLUMNS = ("action_ids", "action_starts", "action_ends", "action_lengths")


class SkipReason(StrEnum):
    """Why a tokenized action was not trained on (closed set)."""

    mask_length_mismatch = "mask_length_mismatch"
    nothing_supervised = "nothing_supervised"
    over_max_length = "over_max_length"
    over_max_records = "over_max_records"
    empty = "empty"
    source_not_selected = "source_not_selected"
    fidelity_not_selected = "fidelity_not_selected"


class SkippedRecord(BaseModel):
    """One tokenized action left out of training, with the reason (the training stage's ledger)."""

    record_id: str
    split: str
    reason: SkipReason
    detail: str


class TokenizedSplit(BaseModel):
    """A split ready for the trainer. ``dataset`` has ``input_ids``, ``labels`` (-100 outside the supervised
    tokens), ``action_starts`` / ``action_ends`` (each trained action's supervised span in the row) and ``row``
    (the row's index); it is None when no action could be trained (``why_empty`` says why)."""

    model_config = {"arbitrary_types_allowed": True}

    name: str
    layout: Layout
    dataset: Dataset | None
    ids: list[str]
    action_ids: list[list[str]]
    lengths: list[int]
    n_supervised: int
    skipped: list[SkippedRecord]

    @property
    def empty(self) -> bool:
        return self.dataset is None

    @property
    def n_actions(self) -> int:
        return sum(len(a) for a in self.action_ids)

    @property
    def n_tokens(self) -> int:
        """Tokens in one pass over the split (one epoch)."""
        return sum(self.lengths)

    def skipped_by_reason(self) -> dict[str, int]:
        return dict(sorted(Counter(s.reason.value for s in self.skipped).items()))

    def why_empty(self) -> str:
        reasons = ", ".join(f"{n} {r}" for r, n in self.skipped_by_reason().items()) or "the split holds no rows"
        detail = next((s.detail for s in self.skipped if s.reason == SkipReason.over_max_length), None)
        return (
            f"split {self.name!r} has no trainable actions ({len(self.skipped)} skipped: {reasons}"
            + (f"; e.g. {detail}" if detail else "")
            + ")"
        )


def load_meta(audit_dir: Path) -> dict:
    path = audit_dir / "tokenized" / "meta.json"
    if not path.is_file():
        raise UserError(f"no tokenized set at {audit_dir}: expected tokenized/meta.json (run `harnessfit audit` first)")
    return loads(path.read_bytes())


def find_eval_splits(audit_dir: Path, wanted: str) -> list[str]:
    """Candidate held-out splits in order: ``[wanted]`` if given, else every conventional name that exists."""
    tok = audit_dir / "tokenized"
    if wanted != "auto":
        if not (tok / f"{wanted}.parquet").is_file():
            raise UserError(f"eval split {wanted!r} not found in {tok} (have: {_have(tok)})")
        return [wanted]
    return [name for name in EVAL_SPLIT_NAMES if (tok / f"{name}.parquet").is_file()]


def _have(tok: Path) -> str:
    return ", ".join(sorted(p.stem for p in tok.glob("*.parquet"))) or "nothing"


def _actions(table, i: int, ids_: list[int], mask: list[int]) -> list[tuple[str, int, int, int]]:
    """``(id, start, end, length)`` of each action of row ``i``; a format-1 row is one action over its mask."""
    if "action_ids" in table.column_names:
        cols = [table.column(c)[i].as_py() for c in ACTION_COLUMNS]
        return list(zip(*cols, strict=True))
    on = [j for j, m in enumerate(mask) if m]
    return [(str(table.column("id")[i].as_py()), on[0], on[-1] + 1, len(ids_))] if on else []


def sft_fidelity(dataset_dir: Path, split: str, lowest: str) -> dict[str, str]:
    """``{SFT record id: tier}`` of the records of ``split`` below the lowest tier a run selects (empty for
    ``content``, which takes every tier): read from the build's ``sft/<split>.jsonl``."""
    if lowest == "content":
        return {}
    path = Path(dataset_dir) / "sft" / f"{split}.jsonl"
    if not path.is_file():
        raise UserError(f"fidelity: byte needs the build's SFT records to know each action's tier; {path} is missing")
    found = {}
    for line in path.read_bytes().splitlines():
        if line.strip():
            rec = loads(line)
            if record_fidelity(rec) != "byte":
                found[str(rec["id"])] = record_fidelity(rec)
    return found


def load_split(
    audit_dir: Path,
    split: str,
    *,
    layout: Layout = "chains",
    max_records: int | None = None,
    max_length: int | None = None,
    sources: list[str] | None = None,
    not_selected: dict[str, str] | None = None,
) -> TokenizedSplit:
    """Load one split in file order, keeping the audited ``input_ids`` and supervised spans unchanged.

    ``max_length`` cuts a chain after its last action whose record fits (the others are skipped as
    ``over_max_length``, exactly as their records would be); ``max_records`` keeps the first N trainable actions
    (a chain is cut after the N-th); ``sources`` keeps only rows whose ``source`` column (the trace format) is listed;
    ``not_selected`` maps action ids of a fidelity tier the run does not train on to that tier (``sft_fidelity``):
    a chain is cut before the first of them (tiers only fall along a conversation), which are skipped.
    """
    path = audit_dir / "tokenized" / f"{split}.parquet"
    if not path.is_file():
        raise UserError(f"split {split!r} not found in {audit_dir / 'tokenized'} (have: {_have(path.parent)})")
    table = pq.read_table(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise UserError(f"{path} lacks columns {missing}: it was not written by `harnessfit audit`")
    all_ids = table.column("input_ids").to_pylist()
    all_masks = table.column("assistant_masks").to_pylist()
    all_sources = table.column("source").to_pylist() if "source" in table.column_names else [None] * len(all_ids)
    row_ids = [str(x) for x in table.column("id").to_pylist()]
    rows: list[dict] = []
    kept_ids: list[str] = []
    kept_actions: list[list[str]] = []
    skipped: list[SkippedRecord] = []
    n_kept = 0

    def skip(aid: str, reason: SkipReason, detail: str) -> None:
        skipped.append(SkippedRecord(record_id=aid, split=split, reason=reason, detail=detail))

    def add(rid: str, ids_: list[int], acts: list[tuple[str, int, int, int]]) -> None:
        labels = [-100] * len(ids_)
        for _, s, e, _ in acts:
            labels[s:e] = ids_[s:e]
        rows.append(
            {
                "input_ids": ids_,
                "labels": labels,
                "action_starts": [a[1] for a in acts],
                "action_ends": [a[2] for a in acts],
                "row": len(rows),
            }
        )
        kept_ids.append(rid)
        kept_actions.append([a[0] for a in acts])

    for i, (rid, ids_, mask, source) in enumerate(zip(row_ids, all_ids, all_masks, all_sources, strict=True)):
        acts = (
            _actions(table, i, ids_ or [], mask or []) if ids_ and mask is not None and len(mask) == len(ids_) else []
        )
        names = [a[0] for a in acts] or [rid]
        if sources is not None and source not in sources:
            for aid in names:
                skip(aid, SkipReason.source_not_selected, f"source {source!r} not in {sources}")
            continue
        if not ids_:
            skip(rid, SkipReason.empty, "no tokens")
            continue
        if mask is None or len(mask) != len(ids_):
            skip(rid, SkipReason.mask_length_mismatch, f"{len(ids_)} ids, {0 if mask is None else len(mask)} mask")
            continue
        if not acts or not any(mask):
            skip(rid, SkipReason.nothing_supervised, "assistant mask is all zero")
            continue
        fits = []
        for k, a in enumerate(acts):
            if not_selected and a[0] in not_selected:
                for b in acts[k:]:
                    skip(
                        b[0],
                        SkipReason.fidelity_not_selected,
                        f"fidelity {not_selected.get(b[0], 'content')!r} not selected (the run trains on tier byte)",
                    )
                break
            if max_length is not None and a[3] > max_length:
                skip(a[0], SkipReason.over_max_length, f"{a[3]} tokens > max_length {max_length}")
            elif max_records is not None and n_kept + len(fits) >= max_records:
                skip(a[0], SkipReason.over_max_records, f"beyond max_records {max_records}")
            else:
                fits.append(a)
        if not fits:
            continue
        n_kept += len(fits)
        if layout == "records":
            for a in fits:
                add(a[0], ids_[: a[3]], [a])
        else:
            add(rid, ids_[: fits[-1][3]], fits)
    if not rows:
        return TokenizedSplit(
            name=split, layout=layout, dataset=None, ids=[], action_ids=[], lengths=[], n_supervised=0, skipped=skipped
        )
    ds = Dataset.from_list(rows)
    return TokenizedSplit(
        name=split,
        layout=layout,
        dataset=ds,
        ids=kept_ids,
        action_ids=kept_actions,
        lengths=[len(r["input_ids"]) for r in rows],
        n_supervised=sum(e - s for r in rows for s, e in zip(r["action_starts"], r["action_ends"], strict=True)),
        skipped=skipped,
    )
