"""``audit``: render a built dataset's SFT records with the real tokenizer and training template, verify every
loss mask, measure lengths against candidate context caps, recommend one, and write the tokenized training set.

What is audited is what is trained: ``out/tokenized/{split}.parquet`` holds the exact ``input_ids`` and
``assistant_masks`` checked here, ``out/tokenizer/`` the tokenizer with the template, and ``meta.json`` the hashes
that tie them together. Every number comes from token counts (no clock, no host), so a second run gives the same
bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from harnessfit.core import jsonio
from harnessfit.core.records import SFTRecord
from harnessfit.errors import UserError
from harnessfit.tokens.render import Problem, RecordError, Rendered, Violation, render_many

__all__ = ["AuditReport", "SplitStats", "DEFAULT_CAPS", "KEEP_FRACTION", "EXPLANATIONS", "audit", "recommend_cap", "length_stats"]

DEFAULT_CAPS: tuple[int, ...] = (4096, 8192, 16384, 20480, 32768)
KEEP_FRACTION = 0.95  # a cap is good enough when it keeps this share of the supervised tokens
_BATCH = 64
_BATCH_BYTES = 8 << 20  # long agent sessions make single records of ~200 k tokens: bound a batch by size too
_MAX_IDS = 50  # record ids listed per violation/problem kind in audit.json (all are in violations.jsonl)


EXPLANATIONS: dict[str, str] = {
    "prompt_in_loss": "supervised tokens outside the action (the template renders the prompt differently once the "
                      "action follows, or outside its {% generation %} block); record kept out of training",
    "missing_end_of_turn": "the action's supervised tokens do not end on an end-of-turn token, so the model would not "
                           "learn to stop; record kept out of training",
    "think_in_labels": "thinking text (<think>…</think> with content) in the supervised tokens although "
                       "think_in_labels is off; record kept out of training",
    "prefix_unstable": "the prompt's own tokens differ from the first tokens of prompt + action (template or "
                       "tokenizer merges across the boundary); record kept out of training",
    "double_encoded_arguments": "tool-call arguments are a JSON string holding JSON (Pi rejects these) or render "
                                "as a string; record kept out of training",
    "invalid_record": "the line is not a valid SFT record",
    "empty_action": "the assistant action has no text and no tool calls",
    "render_error": "the chat template raised an error on this record",
    "too_long": "longer than every candidate cap; never trainable with these caps",
}


class SplitStats(BaseModel):
    records: int = 0
    prompt_tokens: int = 0
    supervised_tokens: int = 0
    total_tokens: int = 0


class CapRow(BaseModel):
    cap: int
    native: bool = False
    records_kept: int
    records_dropped: int
    supervised_kept: int
    supervised_fraction: float


class Finding(BaseModel):
    count: int = 0
    ids: list[str] = Field(default_factory=list)


class AuditReport(BaseModel):
    """``audit.json``: everything the audit measured. Rendered records with any violation are kept out of the
    tokenized set; ``explained`` says why a violation kind may appear (empty when none did)."""

    version: int = 1
    dataset: str
    model: str
    template: dict[str, str]
    think_in_labels: bool
    records_read: int
    records_rendered: int
    records_clean: int
    splits: dict[str, SplitStats]
    total: SplitStats
    lengths: dict[str, float]
    native_context: int | None
    caps: list[CapRow]
    recommended_cap: int | None
    recommendation_reason: str
    cap_applied: int | None
    excluded_over_cap: int
    violations: dict[str, Finding]
    problems: dict[str, Finding]
    tokenized: dict[str, int]
    explained: dict[str, str] = Field(default_factory=dict)


def _read_records(dataset_dir: Path) -> Iterator[tuple[str, SFTRecord | RecordError, str, int]]:
    """(split, record or problem, fallback id, line bytes) for every line of ``sft/*.jsonl``, sorted by split then line."""
    sft = dataset_dir / "sft"
    files = sorted(sft.glob("*.jsonl")) if sft.is_dir() else []
    if not files:
        raise UserError(f"no SFT records in {dataset_dir}: expected {sft}/<split>.jsonl from `harnessfit build`")
    for path in files:
        split = path.stem
        with path.open("rb") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                fallback = f"{path.name}:{n}"
                try:
                    yield split, SFTRecord.model_validate(jsonio.loads(line)), fallback, len(line)
                except (ValidationError, ValueError) as exc:
                    detail = str(exc).splitlines()[0][:200]
                    yield split, RecordError(Problem.invalid_record, detail), fallback, len(line)


def length_stats(lengths: Sequence[int]) -> dict[str, float]:
    if not lengths:
        return {"min": 0, "median": 0, "p95": 0, "max": 0, "mean": 0}
    xs = sorted(lengths)

    def q(p: float) -> float:  # nearest-rank percentile: an actual record length, reproducible
        return float(xs[min(len(xs) - 1, max(0, int(-(-p * len(xs) // 1)) - 1))])

    return {"min": float(xs[0]), "median": q(0.5), "p95": q(0.95), "max": float(xs[-1]),
            "mean": round(sum(xs) / len(xs), 2)}


def _cap_rows(rows: list[tuple[int, int]], caps: Sequence[int], native: int | None) -> list[CapRow]:
    total_sup = sum(s for _, s in rows) or 1
    out = []
    for cap in caps:
        kept = [(n, s) for n, s in rows if n <= cap]
        sup = sum(s for _, s in kept)
        out.append(CapRow(cap=cap, native=cap == native, records_kept=len(kept), records_dropped=len(rows) - len(kept),
                          supervised_kept=sup, supervised_fraction=round(sup / total_sup, 6)))
    return out


def recommend_cap(cap_rows: list[CapRow], native: int | None) -> tuple[int | None, str]:
    """Smallest cap within the model's native context that keeps ``KEEP_FRACTION`` of supervised tokens."""
    usable = [r for r in cap_rows if native is None or r.cap <= native]
    if not cap_rows or cap_rows[0].records_kept + cap_rows[0].records_dropped == 0:
        return None, "no record could be rendered, so no cap can be measured"
    for r in usable:
        if r.supervised_fraction >= KEEP_FRACTION:
            where = f" (native context {native})" if native else ""
            return r.cap, (f"smallest cap within the model's context{where} that keeps ≥ {KEEP_FRACTION:.0%} of "
                           f"supervised tokens: {r.supervised_fraction:.2%} kept, {r.records_dropped} record(s) dropped")
    if usable:
        best = usable[-1]
        return best.cap, (f"no cap within the native context {native} keeps {KEEP_FRACTION:.0%} of supervised tokens; "
                          f"the native limit is the ceiling: {best.supervised_fraction:.2%} kept, "
                          f"{best.records_dropped} record(s) dropped")
    return None, f"every candidate cap exceeds the native context {native}"


class _Row:
    """What the audit keeps per rendered record: counts always, token arrays only when the record can still be
    trained (clean and within the largest cap), so memory stays near the size of the kept token arrays."""

    __slots__ = ("split", "id", "source", "group", "n_tokens", "n_supervised", "clean", "ids", "mask")

    def __init__(self, split: str, rec: SFTRecord, x: Rendered, keep_arrays: bool) -> None:
        import numpy as np

        self.split, self.id, self.source, self.group = split, rec.id, rec.source, rec.group
        self.n_tokens, self.n_supervised, self.clean = x.n_tokens, x.n_supervised, not x.violations
        self.ids = np.asarray(x.input_ids, dtype=np.int32) if keep_arrays else None
        self.mask = np.asarray(x.assistant_masks, dtype=np.int8) if keep_arrays else None


def _count_lines(dataset_dir: Path) -> int:
    total = 0
    for path in sorted((dataset_dir / "sft").glob("*.jsonl")):
        with path.open("rb") as fh:
            total += sum(1 for line in fh if line.strip())
    return total


def audit(dataset_dir: Path, model: str, out_dir: Path, *, caps: Sequence[int] | None = None,
          think_in_labels: bool = False, workers: int = 1, template: str = "auto",
          cap: int | None = None, progress: bool = True) -> AuditReport:
    """Audit ``dataset_dir`` (a ``harnessfit build`` output) with ``model``; write the report and tokenized set to
    ``out_dir``. ``cap`` overrides the recommended cap applied to the tokenized set. ``workers`` is accepted for
    API stability; tokenisation already uses every core through the tokenizer's own thread pool."""
    from rich.progress import Progress

    from harnessfit.models import load_tokenizer, native_context_length, resolve_model, template_info
    from harnessfit.tokens.output import write_outputs

    dataset_dir = Path(dataset_dir)
    if not dataset_dir.is_dir():
        raise UserError(f"dataset folder not found: {dataset_dir}")
    if cap is not None and cap <= 0:
        raise UserError(f"--cap must be a positive token count, not {cap}")
    tokenizer = load_tokenizer(model, template=template)
    native = native_context_length(model)
    cap_list = sorted(set(caps or DEFAULT_CAPS) | ({native} if native else set()))
    biggest = max(cap_list + ([cap] if cap else []))
    info = template_info(tokenizer)

    problems: dict[str, Finding] = {p.value: Finding() for p in Problem}
    violations: dict[str, Finding] = {v.value: Finding() for v in Violation}
    bad_rows: list[dict[str, Any]] = []
    rows: list[_Row] = []
    read = 0

    def note(table: dict[str, Finding], kind: str, rid: str, detail: str) -> None:
        table[kind].count += 1
        table[kind].ids.append(rid)
        bad_rows.append({"id": rid, "kind": kind, "detail": detail})

    def flush(batch: list[tuple[str, SFTRecord]]) -> None:
        results = render_many(tokenizer, [r for _, r in batch], think_in_labels=think_in_labels)
        for (split, rec), res in zip(batch, results):
            if isinstance(res, RecordError):
                note(problems, res.problem.value, rec.id, str(res))
                continue
            for v in res.violations:
                note(violations, v.value, rec.id, f"{v.value} in {split}")
            if not res.violations and res.n_tokens > biggest:
                note(problems, Problem.too_long.value, rec.id, f"{res.n_tokens} tokens > every cap (largest {biggest})")
            rows.append(_Row(split, rec, res, keep_arrays=not res.violations and res.n_tokens <= biggest))

    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("rendering + tokenizing + masking", total=_count_lines(dataset_dir))
        batch: list[tuple[str, SFTRecord]] = []
        size = 0
        for split, rec, fallback, nbytes in _read_records(dataset_dir):
            read += 1
            if isinstance(rec, RecordError):
                note(problems, rec.problem.value, fallback, str(rec))
            else:
                batch.append((split, rec))
                size += nbytes
            if len(batch) >= _BATCH or size >= _BATCH_BYTES:
                flush(batch)
                bar.advance(task, len(batch))
                batch, size = [], 0
        if batch:
            flush(batch)

    clean = [r for r in rows if r.clean]
    cap_rows = _cap_rows([(r.n_tokens, r.n_supervised) for r in clean], cap_list, native)
    recommended, reason = recommend_cap(cap_rows, native)
    applied = cap if cap is not None else recommended
    kept = [r for r in clean if applied is None or r.n_tokens <= applied]

    splits: dict[str, SplitStats] = {}
    total = SplitStats()
    for r in rows:
        for st in (splits.setdefault(r.split, SplitStats()), total):
            st.records += 1
            st.prompt_tokens += r.n_tokens - r.n_supervised
            st.supervised_tokens += r.n_supervised
            st.total_tokens += r.n_tokens
    for table in (problems, violations):
        for f in table.values():
            f.ids = sorted(f.ids)[:_MAX_IDS]
    report = AuditReport(
        dataset=str(dataset_dir), model=model,
        template={"name": info.name, "sha256": info.sha256},
        think_in_labels=think_in_labels, records_read=read, records_rendered=len(rows),
        records_clean=len(clean), splits=dict(sorted(splits.items())), total=total,
        lengths=length_stats([r.n_tokens for r in rows]), native_context=native, caps=cap_rows,
        recommended_cap=recommended, recommendation_reason=reason, cap_applied=applied,
        excluded_over_cap=len(clean) - len(kept), violations=violations, problems=problems,
        tokenized={},
        explained={k: EXPLANATIONS[k] for k, f in sorted({**violations, **problems}.items()) if f.count},
    )
    write_outputs(out_dir, report, kept, sorted(bad_rows, key=lambda r: (r["kind"], r["id"])), tokenizer, info,
                  model=model, resolved=resolve_model(model), lengths=[r.n_tokens for r in clean])
    return report
