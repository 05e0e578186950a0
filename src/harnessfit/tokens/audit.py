"""``audit``: render a built dataset's SFT records with the real tokenizer and training template, verify every
loss mask, measure lengths against candidate context caps, recommend one, and write the tokenized training set.

What is audited is what is trained: ``out/tokenized/{split}.parquet`` holds the exact ``input_ids`` and
``assistant_masks`` checked here, ``out/tokenizer/`` the tokenizer with the template, and ``meta.json`` the hashes
that tie them together. The rows are **chains** (``chains.py``): each trajectory's prefix-stable runs of actions as
one sequence with every trainable action supervised, cut after the last action whose own record fits the cap, so
exactly the actions that are trainable as per-action records are trainable, at a fraction of the tokens (a chain
of one action is that action's record). Every number comes from token counts (no clock, no host), so a second run
gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from harnessfit.core import jsonio
from harnessfit.core.records import SFTRecord
from harnessfit.errors import UserError
from harnessfit.harness.versions import recorded_harness, stage_harness
from harnessfit.models import load_tokenizer, native_context_length, resolve_model, stop_token_ids, template_info
from harnessfit.models.templates import has_generation_markers
from harnessfit.tokens.chains import (
    BREAK_EXPLANATIONS,
    ActionRender,
    BreakReason,
    Chain,
    Run,
    RunResult,
    chain_run,
    split_runs,
)
from harnessfit.tokens.output import write_outputs
from harnessfit.tokens.render import MaskViolation, Problem, RecordError, special_texts

__all__ = [
    "AuditReport",
    "SplitStats",
    "LayoutStats",
    "DEFAULT_CAPS",
    "KEEP_FRACTION",
    "EXPLANATIONS",
    "audit",
    "recommend_cap",
    "length_stats",
]

DEFAULT_CAPS: tuple[int, ...] = (4096, 8192, 16384, 20480, 32768)
KEEP_FRACTION = 0.95  # a cap is good enough when it keeps this share of the supervised tokens
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
    **BREAK_EXPLANATIONS,
}


class SplitStats(BaseModel):
    records: int = 0
    prompt_tokens: int = 0
    supervised_tokens: int = 0
    total_tokens: int = 0


class LayoutStats(BaseModel):
    """The trainable actions of a split (clean, within the applied cap) in both layouts: as per-action records
    (each repeats its whole context) and as chains (what the tokenized set holds)."""

    actions: int = 0
    supervised_tokens: int = 0
    record_tokens: int = 0
    chains: int = 0
    chain_tokens: int = 0
    chain_to_record_ratio: float | None = None

    def add(self, chain: Chain) -> None:
        self.actions += len(chain.actions)
        self.supervised_tokens += chain.n_supervised
        self.record_tokens += chain.record_tokens
        self.chains += 1
        self.chain_tokens += chain.n_tokens
        self.chain_to_record_ratio = round(self.chain_tokens / self.record_tokens, 6) if self.record_tokens else None


class CapRow(BaseModel):
    cap: int
    native: bool = False
    records_kept: int
    records_dropped: int
    supervised_kept: int
    supervised_fraction: float


class Tally(BaseModel):
    """How many records had one kind of problem, violation or break, and their ids."""

    count: int = 0
    ids: list[str] = Field(default_factory=list)


class AuditReport(BaseModel):
    """``audit.json``: everything the audit measured. Rendered records with any violation are kept out of the
    tokenized set; ``layouts`` gives the trainable actions' tokens as records and as chains, ``breaks`` where and why
    a trajectory's chain had to end before its next action; ``explained`` says why a finding may appear (empty
    when none did)."""

    version: int = 2
    dataset: str
    harness: str | None = None  # the target harness (pi@VERSION), from the dataset's manifest
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
    violations: dict[str, Tally]
    problems: dict[str, Tally]
    layouts: dict[str, LayoutStats] = Field(default_factory=dict)
    layouts_total: LayoutStats = Field(default_factory=LayoutStats)
    breaks: dict[str, Tally] = Field(default_factory=dict)
    runs: dict[str, int] = Field(default_factory=dict)
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

    return {
        "min": float(xs[0]),
        "median": q(0.5),
        "p95": q(0.95),
        "max": float(xs[-1]),
        "mean": round(sum(xs) / len(xs), 2),
    }


def _cap_rows(rows: list[tuple[int, int]], caps: Sequence[int], native: int | None) -> list[CapRow]:
    total_sup = sum(s for _, s in rows) or 1
    out = []
    for cap in caps:
        kept = [(n, s) for n, s in rows if n <= cap]
        sup = sum(s for _, s in kept)
        out.append(
            CapRow(
                cap=cap,
                native=cap == native,
                records_kept=len(kept),
                records_dropped=len(rows) - len(kept),
                supervised_kept=sup,
                supervised_fraction=round(sup / total_sup, 6),
            )
        )
    return out


def recommend_cap(cap_rows: list[CapRow], native: int | None) -> tuple[int | None, str]:
    """Smallest cap within the model's native context that keeps ``KEEP_FRACTION`` of supervised tokens."""
    usable = [r for r in cap_rows if native is None or r.cap <= native]
    if not cap_rows or cap_rows[0].records_kept + cap_rows[0].records_dropped == 0:
        return None, "no record could be rendered, so no cap can be measured"
    for r in usable:
        if r.supervised_fraction >= KEEP_FRACTION:
            where = f" (native context {native})" if native else ""
            return r.cap, (
                f"smallest cap within the model's context{where} that keeps ≥ {KEEP_FRACTION:.0%} of "
                f"supervised tokens: {r.supervised_fraction:.2%} kept, {r.records_dropped} record(s) dropped"
            )
    if usable:
        best = usable[-1]
        return best.cap, (
            f"no cap within the native context {native} keeps {KEEP_FRACTION:.0%} of supervised tokens; "
            f"the native limit is the ceiling: {best.supervised_fraction:.2%} kept, "
            f"{best.records_dropped} record(s) dropped"
        )
    return None, f"every candidate cap exceeds the native context {native}"


class _Row:
    """What the audit keeps per rendered action: its counts (the token arrays live in the chains)."""

    __slots__ = ("split", "id", "n_tokens", "n_supervised", "clean")

    def __init__(self, split: str, x: ActionRender) -> None:
        self.split, self.id, self.n_tokens, self.n_supervised = split, x.id, x.n_tokens, x.n_supervised
        self.clean = not x.violations


def _count_lines(dataset_dir: Path) -> int:
    total = 0
    for path in sorted((dataset_dir / "sft").glob("*.jsonl")):
        with path.open("rb") as fh:
            total += sum(1 for line in fh if line.strip())
    return total


def _dataset_harness(dataset_dir: Path, requested: str | None) -> str:
    """The harness the audit targets: the dataset manifest's (``--harness`` must agree with it), else the default."""
    path = dataset_dir / "manifest.json"
    try:
        recorded = recorded_harness(jsonio.loads(path.read_bytes())) if path.is_file() else None
    except ValueError:
        recorded = None
    return stage_harness(
        requested,
        recorded,
        what=f"the dataset {dataset_dir}",
        stage="audit",
        redo="rebuild the dataset (`harnessfit build`)",
    )


@dataclass
class _AuditState:
    """What the audit gathers while it renders: the tallies (each with its rows for ``violations.jsonl`` and
    ``breaks.jsonl``), the per-action counts, the chains cut to the largest cap, and the lines read."""

    biggest: int  # the largest cap: longer clean actions are ``too_long``, chains are cut there
    problems: dict[str, Tally] = field(default_factory=lambda: {p.value: Tally() for p in Problem})
    violations: dict[str, Tally] = field(default_factory=lambda: {v.value: Tally() for v in MaskViolation})
    breaks: dict[str, Tally] = field(default_factory=lambda: {b.value: Tally() for b in BreakReason})
    bad_rows: list[dict[str, Any]] = field(default_factory=list)
    break_rows: list[dict[str, Any]] = field(default_factory=list)
    rows: list[_Row] = field(default_factory=list)
    chains: list[Chain] = field(default_factory=list)
    runs: dict[str, int] = field(default_factory=lambda: {"runs": 0, "by_definition": 0})
    read: int = 0

    def note(self, table: dict[str, Tally], kind: str, rid: str, detail: str) -> None:
        table[kind].count += 1
        table[kind].ids.append(rid)
        rows = self.break_rows if table is self.breaks else self.bad_rows
        rows.append({"id": rid, "kind": kind, "detail": detail})

    def records(self, dataset_dir: Path, advance: Callable[[], None]) -> Iterator[SFTRecord]:
        """The dataset's valid records (each under its file's split); a line that is none is noted as a problem."""
        for split, rec, fallback, _ in _read_records(dataset_dir):
            self.read += 1
            advance()
            if isinstance(rec, RecordError):
                self.note(self.problems, rec.problem.value, fallback, str(rec))
                continue
            rec.split = split  # the file's split is the one the tokenized set is written under
            yield rec

    def add_run(self, run: Run, res: RunResult) -> None:
        """Count one rendered run (``chains.chain_run``'s result): its actions' findings and rows, its chains."""
        self.runs["runs"] += 1
        self.runs["by_definition"] += res.fallback
        for rid, x in zip(run.ids, res.actions, strict=True):
            if isinstance(x, RecordError):
                self.note(self.problems, x.problem.value, rid, str(x))
                continue
            for v in x.violations:
                self.note(self.violations, v.value, rid, f"{v.value} in {run.split}")
            if not x.violations and x.n_tokens > self.biggest:
                self.note(
                    self.problems,
                    Problem.too_long.value,
                    rid,
                    f"{x.n_tokens} tokens > every cap (largest {self.biggest})",
                )
            self.rows.append(_Row(run.split, x))
        for b in res.breaks:
            self.note(self.breaks, b.reason.value, b.before, f"after {b.after}")
        for ch in res.chains:  # token arrays are kept only up to the largest cap, so memory stays bounded
            cut = ch.cut(self.biggest)
            if cut is not None:
                self.chains.append(
                    Chain(cut.split, cut.conversation_id, cut.source, cut.group, cut.input_ids.copy(), cut.actions)
                )


def _render_all(
    state: _AuditState, dataset_dir: Path, tokenizer: Any, *, think_in_labels: bool, progress: bool
) -> None:
    """Render and tokenize every run of the dataset's records once, as chains, into ``state``."""
    from rich.progress import Progress

    eot = set(stop_token_ids(tokenizer))
    specials = special_texts(tokenizer)
    with_spans = has_generation_markers(tokenizer.chat_template)
    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("rendering + tokenizing + masking (chains)", total=_count_lines(dataset_dir))
        for run, brk in split_runs(state.records(dataset_dir, lambda: bar.advance(task))):
            if brk is not None:
                state.note(state.breaks, brk.reason.value, brk.before, f"after {brk.after}")
            state.add_run(
                run,
                chain_run(
                    tokenizer, run, think_in_labels=think_in_labels, eot=eot, specials=specials, with_spans=with_spans
                ),
            )


def _split_stats(rows: list[_Row]) -> tuple[dict[str, SplitStats], SplitStats]:
    splits: dict[str, SplitStats] = {}
    total = SplitStats()
    for r in rows:
        for st in (splits.setdefault(r.split, SplitStats()), total):
            st.records += 1
            st.prompt_tokens += r.n_tokens - r.n_supervised
            st.supervised_tokens += r.n_supervised
            st.total_tokens += r.n_tokens
    return dict(sorted(splits.items())), total


def _layouts(rows: list[_Row], kept_chains: list[Chain]) -> tuple[dict[str, LayoutStats], LayoutStats]:
    layouts: dict[str, LayoutStats] = {name: LayoutStats() for name in sorted({r.split for r in rows})}
    layouts_total = LayoutStats()
    for ch in kept_chains:
        for st in (layouts.setdefault(ch.split, LayoutStats()), layouts_total):
            st.add(ch)
    return dict(sorted(layouts.items())), layouts_total


def audit(
    dataset_dir: Path,
    model: str,
    out_dir: Path,
    *,
    caps: Sequence[int] | None = None,
    think_in_labels: bool = False,
    template: str = "auto",
    cap: int | None = None,
    progress: bool = True,
    harness: str | None = None,
) -> AuditReport:
    """Audit ``dataset_dir`` (a ``harnessfit build`` output) with ``model``; write the report and tokenized set to
    ``out_dir``. ``cap`` overrides the recommended cap applied to the tokenized set. Each chain is tokenized once
    (``chains.chain_run``), in this process (there is no worker count: the runs are rendered in order); the
    per-action counts and checks are the ones a per-action render gives. ``harness`` (``pi@VERSION``) must be the
    one the dataset was built for (default: that one); it is recorded for training."""
    dataset_dir = Path(dataset_dir)
    if not dataset_dir.is_dir():
        raise UserError(f"dataset folder not found: {dataset_dir}")
    target = _dataset_harness(dataset_dir, harness)
    if cap is not None and cap <= 0:
        raise UserError(f"--cap must be a positive token count, not {cap}")
    tokenizer = load_tokenizer(model, template=template)
    native = native_context_length(model)
    cap_list = sorted(set(caps or DEFAULT_CAPS) | ({native} if native else set()))
    info = template_info(tokenizer)
    state = _AuditState(biggest=max(cap_list + ([cap] if cap else [])))
    _render_all(state, dataset_dir, tokenizer, think_in_labels=think_in_labels, progress=progress)

    rows = state.rows
    clean = [r for r in rows if r.clean]
    cap_rows = _cap_rows([(r.n_tokens, r.n_supervised) for r in clean], cap_list, native)
    recommended, reason = recommend_cap(cap_rows, native)
    applied = cap if cap is not None else recommended
    kept = [r for r in clean if applied is None or r.n_tokens <= applied]
    kept_chains = [c for c in (ch.cut(applied) for ch in state.chains) if c is not None]
    layouts, layouts_total = _layouts(rows, kept_chains)
    splits, total = _split_stats(rows)
    problems, violations, breaks = state.problems, state.violations, state.breaks
    for table in (problems, violations, breaks):
        for f in table.values():
            f.ids = sorted(f.ids)[:_MAX_IDS]
    report = AuditReport(
        dataset=str(dataset_dir),
        harness=target,
        model=model,
        template={"name": info.name, "sha256": info.sha256},
        think_in_labels=think_in_labels,
        records_read=state.read,
        records_rendered=len(rows),
        records_clean=len(clean),
        splits=splits,
        total=total,
        lengths=length_stats([r.n_tokens for r in rows]),
        native_context=native,
        caps=cap_rows,
        recommended_cap=recommended,
        recommendation_reason=reason,
        cap_applied=applied,
        excluded_over_cap=len(clean) - len(kept),
        violations=violations,
        problems=problems,
        layouts=layouts,
        layouts_total=layouts_total,
        breaks=breaks,
        runs=state.runs,
        tokenized={},
        explained={k: EXPLANATIONS[k] for k, f in sorted({**violations, **problems, **breaks}.items()) if f.count},
    )
    write_outputs(
        out_dir,
        report,
        kept_chains,
        sorted(state.bad_rows, key=lambda r: (r["kind"], r["id"])),
        tokenizer,
        info,
        model=model,
        resolved=resolve_model(model),
        lengths=[r.n_tokens for r in clean],
        break_rows=sorted(state.break_rows, key=lambda r: (r["kind"], r["id"])),
    )
    return report
