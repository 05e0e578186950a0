"""Decision points for GRPO: the build's ``decision_points/<split>.jsonl`` rendered with the audited template.

A decision point is a real conversation state and the next assistant turn the trace took there. The prompt is the
state rendered by the audit's tokenizer and chat template with the tools offered at that point and the generation
prompt — the conversion (``harnessfit.models.to_template_messages``) and the call the server makes
(``serve.engine.render_prompt``), so the policy is trained on exactly the prompts it is served. Points that cannot
be used (another trace format than asked, a state the template cannot render, a prompt over the cap) are listed
with the reason, never dropped silently.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from harnessfit.core.records import record_fidelity
from harnessfit.errors import UserError
from harnessfit.models.messages import MessageError, to_template_messages

__all__ = [
    "DPSkip",
    "SkippedPoint",
    "DecisionPoints",
    "load_decision_points",
    "load_heldout_points",
    "render_state",
    "dataset_dir_of",
]


class DPSkip(StrEnum):
    """Why a decision point was not used (closed set)."""

    source_not_selected = "source_not_selected"
    fidelity_not_selected = "fidelity_not_selected"
    render_error = "render_error"
    prompt_over_max_length = "prompt_over_max_length"
    invalid_record = "invalid_record"


class SkippedPoint(BaseModel):
    record_id: str
    split: str
    reason: DPSkip
    detail: str


class DecisionPoints(BaseModel):
    """Rows for TRL (``prompt`` text + the columns the rewards read) and what was skipped."""

    model_config = {"arbitrary_types_allowed": True}

    name: str
    rows: list[dict[str, Any]]
    prompt_lengths: list[int]
    skipped: list[SkippedPoint]

    def dataset(self):
        from datasets import Dataset

        return Dataset.from_list(self.rows)

    @property
    def ids(self) -> list[str]:
        return [r["dp_id"] for r in self.rows]


def dataset_dir_of(audit_dir: Path, given: str | None) -> Path:
    """The build folder: ``given``, else the dataset ``audit.json`` says the audit read."""
    if given:
        path = Path(given).expanduser().resolve()
    else:
        report = audit_dir / "audit.json"
        if not report.is_file():
            raise UserError(
                f"no dataset_dir set and no audit.json in {audit_dir} to find it: set dataset_dir: to the "
                "`harnessfit build` output"
            )
        named = str(orjson.loads(report.read_bytes())["dataset"])
        path = Path(named).expanduser().resolve()
        if not (path / "decision_points").is_dir() and not Path(named).expanduser().is_absolute():
            raise UserError(
                f"{report} names the dataset {named!r}, relative to the folder the audit ran in; it is "
                f"not a build output from here ({Path.cwd()}): set dataset_dir: to the build folder"
            )
    if not (path / "decision_points").is_dir():
        raise UserError(
            f"no decision_points/ in {path}: GRPO trains on the decision points `harnessfit build` "
            "exports; set dataset_dir: to a build output"
        )
    return path


def render_state(tokenizer, state: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[str, list[int]]:
    """Prompt text and token ids of a conversation state: template messages, the tools, the generation prompt,
    tokenized without extra special tokens (the template writes them) — ``serve.engine.render_prompt`` for the
    same request. The trainer tokenizes the text the same way (``HarnessfitGRPOTrainer``)."""
    text = tokenizer.apply_chat_template(
        to_template_messages(state), tools=tools or None, add_generation_prompt=True, tokenize=False
    )
    return text, list(tokenizer(text, add_special_tokens=False)["input_ids"])


def load_decision_points(
    dataset_dir: Path,
    split: str,
    tokenizer,
    *,
    sources: list[str] | None = None,
    max_records: int | None = None,
    max_prompt_length: int | None = None,
    fidelity: str = "content",
) -> DecisionPoints:
    """Read and render one split's decision points in file order (see the module docstring); ``fidelity="byte"``
    keeps only points whose state is byte-exact (a point without the field is: its build was at tier byte)."""
    path = dataset_dir / "decision_points" / f"{split}.jsonl"
    if not path.is_file():
        have = ", ".join(sorted(p.stem for p in (dataset_dir / "decision_points").glob("*.jsonl"))) or "nothing"
        raise UserError(f"split {split!r} not found in {dataset_dir / 'decision_points'} (have: {have})")
    rows, lengths, skipped = [], [], []
    with path.open("rb") as fh:
        for n, line in enumerate(fh):
            if max_records is not None and len(rows) >= max_records:
                break
            if not line.strip():
                continue
            try:
                dp = orjson.loads(line)
                rid, state, tools, turn = str(dp["id"]), dp["state"], dp["tools"], dp["next_turn"]
            except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
                skipped.append(
                    SkippedPoint(
                        record_id=f"line-{n + 1}",
                        split=split,
                        reason=DPSkip.invalid_record,
                        detail=f"{type(exc).__name__}: {exc}"[:200],
                    )
                )
                continue
            if sources is not None and dp.get("source") not in sources:
                skipped.append(
                    SkippedPoint(
                        record_id=rid,
                        split=split,
                        reason=DPSkip.source_not_selected,
                        detail=f"source {dp.get('source')!r} not in {sources}",
                    )
                )
                continue
            if fidelity == "byte" and record_fidelity(dp) != "byte":
                skipped.append(
                    SkippedPoint(
                        record_id=rid,
                        split=split,
                        reason=DPSkip.fidelity_not_selected,
                        detail=f"fidelity {record_fidelity(dp)!r} (alterations: "
                        f"{', '.join(dp.get('alterations') or [])}) below byte",
                    )
                )
                continue
            try:
                text, ids = render_state(tokenizer, state, tools)
            except (MessageError, Exception) as exc:  # noqa: BLE001 - a state the template cannot render
                skipped.append(
                    SkippedPoint(
                        record_id=rid,
                        split=split,
                        reason=DPSkip.render_error,
                        detail=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200],
                    )
                )
                continue
            if max_prompt_length is not None and len(ids) > max_prompt_length:
                skipped.append(
                    SkippedPoint(
                        record_id=rid,
                        split=split,
                        reason=DPSkip.prompt_over_max_length,
                        detail=f"{len(ids)} tokens > max_prompt_length {max_prompt_length}",
                    )
                )
                continue
            rows.append(
                {
                    "prompt": text,
                    "dp_id": rid,
                    "tools": orjson.dumps(tools).decode(),
                    "reference": orjson.dumps(turn).decode(),
                    "state": orjson.dumps(state).decode(),
                }
            )
            lengths.append(len(ids))
    if not rows:
        reasons = ", ".join(sorted({s.reason.value for s in skipped})) or "the split is empty"
        raise UserError(f"no usable decision points in {path} ({len(skipped)} skipped: {reasons}){_fix(path, sources)}")
    return DecisionPoints(name=split, rows=rows, prompt_lengths=lengths, skipped=skipped)


def _fix(path: Path, sources: list[str] | None) -> str:
    """What the split holds when ``sources`` selected none of it: the fix names what could be chosen."""
    if sources is None:
        return ""
    held: dict[str, int] = {}
    with path.open("rb") as fh:
        for line in fh:
            try:
                src = str(orjson.loads(line).get("source"))
            except (orjson.JSONDecodeError, AttributeError):
                continue
            held[src] = held.get(src, 0) + 1
    if not held or any(s in held for s in sources):
        return ""
    have = ", ".join(f"{k} {v}" for k, v in sorted(held.items(), key=lambda kv: -kv[1]))
    return f"; it holds {have}: set sources to some of them, or remove sources to use all"


def load_heldout_points(dataset_dir: Path, wanted: str, tokenizer, **kwargs: Any) -> tuple[DecisionPoints | None, str]:
    """The held-out decision points and a line saying what was chosen. ``wanted`` 'auto' tries validation, val, valid
    and test in turn (the first with usable points wins; a candidate without is said and skipped); a named split is
    used as it is. None with the reason when no candidate has usable points: GRPO then trains without the held-out
    before/after instead of stopping."""
    # heavy: train.data pulls datasets/pyarrow; this module stays light for the report and the eval
    from harnessfit.train.data import EVAL_SPLIT_NAMES

    folder = dataset_dir / "decision_points"
    names = [wanted] if wanted != "auto" else [n for n in EVAL_SPLIT_NAMES if (folder / f"{n}.jsonl").is_file()]
    notes: list[str] = []
    for name in names:
        try:
            points = load_decision_points(dataset_dir, name, tokenizer, **kwargs)
        except UserError as exc:
            if wanted != "auto":
                raise
            notes.append(str(exc))
            continue
        return points, "; ".join([*notes, f"held-out decision points: split {name!r} ({len(points.rows)} usable)"])
    if not names:
        notes.append(f"no held-out split in {folder}")
    return None, "; ".join([*notes, "training without the held-out before/after"])
