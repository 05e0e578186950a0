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

from harnessfit import jsonio
from harnessfit.dataset.records import SFTRecord
from harnessfit.errors import UserError
from harnessfit.tokens.render import Problem, RecordError, Rendered, Violation, render_many

__all__ = ["AuditReport", "SplitStats", "DEFAULT_CAPS", "KEEP_FRACTION", "audit", "recommend_cap", "length_stats"]

DEFAULT_CAPS: tuple[int, ...] = (4096, 8192, 16384, 20480, 32768)
KEEP_FRACTION = 0.95  # a cap is good enough when it keeps this share of the supervised tokens
_BATCH = 64
_MAX_IDS = 50  # record ids listed per violation/problem kind in audit.json (all are in violations.jsonl)


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


def _read_records(dataset_dir: Path) -> Iterator[tuple[str, SFTRecord | RecordError, str]]:
    """(split, record or problem, fallback id) for every line of ``sft/*.jsonl``, sorted by split then line."""
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
                    yield split, SFTRecord.model_validate(jsonio.loads(line)), fallback
                except (ValidationError, ValueError) as exc:
                    detail = str(exc).splitlines()[0][:200]
                    yield split, RecordError(Problem.invalid_record, detail), fallback


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


def audit(dataset_dir: Path, model: str, out_dir: Path, *, caps: Sequence[int] | None = None,
          think_in_labels: bool = False, workers: int = 1, template: str = "auto",
          cap: int | None = None, progress: bool = True) -> AuditReport:
    """Audit ``dataset_dir`` (a ``harnessfit build`` output) with ``model``; write the report and tokenized set to
    ``out_dir``. ``cap`` overrides the recommended cap applied to the tokenized set. ``workers`` is accepted for
    API stability; tokenisation already uses every core through the tokenizer's own thread pool."""
    from harnessfit.models import load_tokenizer, native_context_length, resolve_model, template_info
    from harnessfit.tokens.output import write_outputs

    dataset_dir = Path(dataset_dir)
    if not dataset_dir.is_dir():
        raise UserError(f"dataset folder not found: {dataset_dir}")
    tokenizer = load_tokenizer(model, template=template)
    native = native_context_length(model)
    cap_list = sorted(set(caps or DEFAULT_CAPS) | ({native} if native else set()))
    info = template_info(tokenizer)

    records = list(_read_records(dataset_dir))
    rendered: list[tuple[str, SFTRecord, Rendered]] = []
    problems: dict[str, Finding] = {p.value: Finding() for p in Problem}
    violations: dict[str, Finding] = {v.value: Finding() for v in Violation}
    bad_rows: list[dict[str, Any]] = []

    def note(table: dict[str, Finding], kind: str, rid: str, detail: str) -> None:
        table[kind].count += 1
        table[kind].ids.append(rid)
        bad_rows.append({"id": rid, "kind": kind, "detail": detail})

    todo = [(split, rec) for split, rec, _ in records if isinstance(rec, SFTRecord)]
    for split, rec, fallback in records:
        if isinstance(rec, RecordError):
            note(problems, rec.problem.value, fallback, str(rec))
    _render_all(tokenizer, todo, think_in_labels, progress, rendered, problems, violations, note)

    clean = [(s, r, x) for s, r, x in rendered if not x.violations]
    rows = [(x.n_tokens, x.n_supervised) for _, _, x in clean]
    cap_rows = _cap_rows(rows, cap_list, native)
    recommended, reason = recommend_cap(cap_rows, native)
    applied = cap if cap is not None else recommended
    biggest = max(cap_list) if cap_list else None
    for _, rec, x in clean:
        if biggest is not None and x.n_tokens > biggest:
            note(problems, Problem.too_long.value, rec.id, f"{x.n_tokens} tokens > every cap (largest {biggest})")
    kept = [(s, r, x) for s, r, x in clean if applied is None or x.n_tokens <= applied]

    splits: dict[str, SplitStats] = {}
    total = SplitStats()
    for split, _, x in sorted(rendered, key=lambda t: (t[0], t[1].id)):
        for st in (splits.setdefault(split, SplitStats()), total):
            st.records += 1
            st.prompt_tokens += x.n_tokens - x.n_supervised
            st.supervised_tokens += x.n_supervised
            st.total_tokens += x.n_tokens
    for table in (problems, violations):
        for f in table.values():
            f.ids = sorted(f.ids)[:_MAX_IDS]
    report = AuditReport(
        dataset=str(dataset_dir), model=model,
        template={"name": info.name, "sha256": info.sha256},
        think_in_labels=think_in_labels, records_read=len(records), records_rendered=len(rendered),
        records_clean=len(clean), splits=dict(sorted(splits.items())), total=total,
        lengths=length_stats([x.n_tokens for _, _, x in rendered]), native_context=native, caps=cap_rows,
        recommended_cap=recommended, recommendation_reason=reason, cap_applied=applied,
        excluded_over_cap=len(clean) - len(kept), violations=violations, problems=problems,
        tokenized={},
    )
    write_outputs(out_dir, report, kept, sorted(bad_rows, key=lambda r: (r["kind"], r["id"])), tokenizer, info,
                  model=model, resolved=resolve_model(model), lengths=[x.n_tokens for _, _, x in clean])
    return report


def _render_all(tokenizer, todo, think_in_labels, progress, rendered, problems, violations, note) -> None:
    from rich.progress import Progress

    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("rendering + tokenizing", total=len(todo))
        for i in range(0, len(todo), _BATCH):
            chunk = todo[i:i + _BATCH]
            results = render_many(tokenizer, [r for _, r in chunk], think_in_labels=think_in_labels)
            for (split, rec), res in zip(chunk, results):
                if isinstance(res, RecordError):
                    note(problems, res.problem.value, rec.id, str(res))
                    continue
                for v in res.violations:
                    note(violations, v.value, rec.id, f"{v.value} in {split}")
                rendered.append((split, rec, res))
            bar.advance(task, len(chunk))
