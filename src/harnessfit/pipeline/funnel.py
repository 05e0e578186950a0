"""The data funnel of a run: from the tool calls read to the actions trained, one count per stage, each in a stated
unit.

Every stage already reports its own share (convert's ``yield.json``, the build's ``manifest.json``, the audit's
``audit.json`` and tokenized set, a training run's ``result.json``, GRPO's ``completions.jsonl`` and
``grpo_stats.json``). This module only reads those files and lines them up, so a user sees where the data went
without converting units in their head. The units differ on purpose and each step names its own:

- a **tool call** is one call in a trace; a **label** is a tool call that training may imitate;
- an **action** is one assistant turn to learn (one SFT record): it holds any number of tool calls, or none (a text
  answer), which is why actions can outnumber labels;
- a **decision point** is one action's state, used by GRPO.

The train-split counts are what training can use; the other splits are held out. ``warnings`` name a run that
trains on fewer than ``FEW_ACTIONS`` actions, or whose GRPO groups all had zero reward variance (no learning
signal), so neither ends as a quiet "completed".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessfit.core import jsonio
from harnessfit.core.jsonio import read_json_object

__all__ = ["FEW_ACTIONS", "FunnelStep", "Funnel", "read_funnel", "train_warnings", "grpo_warnings"]

FEW_ACTIONS = 50  # below this many trained actions a run says loudly that it learned from very little


@dataclass(frozen=True)
class FunnelStep:
    """One count: which stage wrote it, what it counts, in which unit, and a short note."""

    stage: str
    what: str
    unit: str
    count: int
    note: str = ""


@dataclass
class Funnel:
    steps: list[FunnelStep] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_rows(self) -> list[dict[str, Any]]:
        return [
            {"stage": s.stage, "what": s.what, "unit": s.unit, "count": s.count, "note": s.note} for s in self.steps
        ]


def _dataset_steps(dataset: Path) -> list[FunnelStep]:
    manifest = read_json_object(dataset / "manifest.json") or {}
    total = (manifest.get("yield") or read_json_object(dataset / "yield.json") or {}).get("total") or {}
    steps = []
    if "calls" in total:
        steps.append(FunnelStep("convert", "tool calls read", "tool calls", int(total["calls"])))
        steps.append(
            FunnelStep(
                "convert",
                "tool calls that are labels",
                "tool calls",
                int(total.get("labels", 0)),
                "see yield.md for every lost call's reason",
            )
        )
    per_split = (manifest.get("splits") or {}).get("per_split") or {}
    if per_split:
        every = sum(int(v.get("sft", 0)) for v in per_split.values())  # ``sft`` counts the exact prefixes' too
        train = per_split.get("train") or {}
        steps.append(
            FunnelStep(
                "build",
                "actions to learn, all splits",
                "actions",
                every,
                "an action is one assistant turn: any number of tool calls, or a text answer",
            )
        )
        prefix = int(train.get("prefix_sft", 0))
        steps.append(
            FunnelStep(
                "build",
                "actions to learn, train split",
                "actions",
                int(train.get("sft", 0)),
                "after redaction, dedup and the grouped split" + (f"; {prefix} from exact prefixes" if prefix else ""),
            )
        )
    return steps


def _audit_steps(audit: Path, split: str = "train") -> list[FunnelStep]:
    import pyarrow.parquet as pq

    report = read_json_object(audit / "audit.json") or {}
    steps = []
    rendered = (report.get("splits") or {}).get(split, {}).get("records")
    if rendered is not None:
        steps.append(FunnelStep("audit", f"actions rendered, {split} split", "actions", int(rendered)))
    path = audit / "tokenized" / f"{split}.parquet"
    if path.is_file():
        ids = pq.read_table(path, columns=["action_ids"]).column("action_ids").to_pylist()
        cap = report.get("cap_applied")
        steps.append(
            FunnelStep(
                "audit",
                f"actions within the cap, {split} split",
                "actions",
                sum(len(a or []) for a in ids),
                f"cap {cap} tokens" if cap else "",
            )
        )
    return steps


def _train_steps(train: Path) -> list[FunnelStep]:
    data = (read_json_object(train / "result.json") or {}).get("data") or {}
    if "train_actions" not in data:
        return []
    skipped = data.get("train_skipped_by_reason") or {}
    why = ", ".join(f"{k} {v}" for k, v in sorted(skipped.items()))
    return [
        FunnelStep(
            "train sft",
            "actions selected for training",
            "actions",
            int(data["train_actions"]),
            f"skipped: {why}" if why else "",
        ),
        FunnelStep(
            "train sft",
            "actions trained (seen at least once)",
            "actions",
            int(data.get("actions_seen", data["train_actions"])),
        ),
    ]


def _grpo_steps(grpo: Path) -> list[FunnelStep]:
    path = grpo / "completions.jsonl"
    if not path.is_file():
        return []
    used = {row.get("dp_id") for row in jsonio.read_jsonl(path, bad_lines="skip", objects_only=True)}
    used.discard(None)
    return [FunnelStep("train grpo", "decision points used", "decision points", len(used))]


def train_warnings(train: Path) -> list[str]:
    """A warning when a finished SFT run trained on fewer than ``FEW_ACTIONS`` actions."""
    data = (read_json_object(train / "result.json") or {}).get("data") or {}
    n = data.get("actions_seen", data.get("train_actions"))
    if n is None or n >= FEW_ACTIONS:
        return []
    skipped = data.get("train_skipped_by_reason") or {}
    top = max(skipped.items(), key=lambda kv: kv[1]) if skipped else None
    hint = f"; most skipped actions: {top[0]} ({top[1]})" if top else ""
    return [f"training saw only {n} action(s) (fewer than {FEW_ACTIONS}): the model learned from very little{hint}"]


def grpo_warnings(grpo: Path) -> list[str]:
    """A warning when every GRPO group had zero reward variance (no advantage, so no learning signal)."""
    stats = (read_json_object(grpo / "grpo_stats.json") or {}).get("all") or {}
    if stats.get("groups") and stats.get("zero_variance_groups") == 1.0:
        return [
            f"every GRPO group ({stats['groups']}) had zero reward variance: no advantage, no learning signal "
            "(more generations, a higher temperature, or rewards that tell the samples apart)"
        ]
    return []


def read_funnel(
    *, dataset: Path | None = None, audit: Path | None = None, train: Path | None = None, grpo: Path | None = None
) -> Funnel:
    """The funnel over whichever stage folders are given (each optional)."""
    funnel = Funnel()
    if dataset is not None:
        funnel.steps += _dataset_steps(dataset)
    if audit is not None:
        funnel.steps += _audit_steps(audit)
        audited = (read_json_object(audit / "audit.json") or {}).get("dataset")
        if (
            dataset is not None
            and audited
            and Path(audited).resolve() != Path(dataset).resolve()
            and (dataset / "manifest.json").is_file()
        ):
            funnel.warnings.append(
                f"the audit at {audit} read {audited}, not the dataset {dataset}: its counts are not this build's"
            )
    if train is not None:
        funnel.steps += _train_steps(train)
        funnel.warnings += train_warnings(train)
    if grpo is not None:
        funnel.steps += _grpo_steps(grpo)
        funnel.warnings += grpo_warnings(grpo)
    return funnel
