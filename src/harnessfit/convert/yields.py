"""Action-level yield: what became of every source tool call, per trajectory, file and format.

Every assistant tool call a reader read is counted exactly once, as one of:

- ``label``: its assistant turn is a training label (in a complete conversation, or in the exact prefix of a
  rejected one), of fidelity tier ``byte`` or, when its context holds a result rendered from output the source agent
  altered (``formats.base.Altered``, built at tier ``content``), ``content``;
- ``dropped``: a UI-only call dropped with its result under ``convert.policy`` (by policy name);
- ``lost``, by reason: the ``Reason`` of the problem that cost it — the nearest problem at or before its turn (its
  own, when the call itself is the problem), ``aborted_or_error_turn`` for calls of turns Pi drops, or a reader's
  reason for calls it left out of the steps (``Trajectory.skipped_calls``: ``demonstration``, ``other_agent``,
  ``context_not_rebuilt``: ``core.trajectory.CONTEXT_NOT_REBUILT``).

So ``calls == labels + sum(dropped) + sum(lost)`` for every file and in total, and ``yield.json`` checks it. Calls
shared by several trajectories of one unit (a Pi session's side branches repeat the active branch's prefix) are
counted once: a side branch counts only the calls no earlier trajectory of its unit holds (by call id, name and
occurrence). Likewise a Pi compaction epoch repeats, as history only, the turns the compaction kept: they are
counted in the earlier epoch that wrote them.

**Blockers.** A blocker is a kind of problem: (reason, source tool). It *unlocks* a call when removing every problem
of that kind from the call's trajectory would make the call a label (the other problems staying). ``yield.json``
ranks the blockers by the calls they would unlock, per format — what to fix first.

**Recording Pis.** A Pi session names no release; ``harness.recorded`` lists the Pis that could have written it.
``pi_recorded`` groups the Pi sessions by that list and by the releases whose words their Pi-authored texts are in
(``texts_fit``, when the texts tell: ``Recorded.texts``): their labels at this run's target, and ``labels_at_recorder``,
the labels with every finding of this run but ``harness_version_mismatch`` (targeting a Pi that recorded them: no
version difference, the other findings as they are). The convert and build summaries print one line per candidate
target from it (``recorded_lines``); no second conversion runs.

Files written beside the ledger (``write_yield``): ``yield.json`` (schema below) and ``yield.md`` (the same, as
tables)::

    {"identity_holds": bool,
     "total":     {"calls", "labels", "dropped": {policy: n}, "lost": {reason: n}},
     "by_format": {format: {"files", "calls", "labels", "dropped", "lost"}},
     "labels_by_fidelity": {"byte": n, "content": n},      # only in a tier-content run, also in total/by_format
     "pi_recorded": [{"versions": "0.73.1|0.79.10|0.82.0", "texts_fit": "0.13.2–0.30.2", "files", "calls", "labels",
                      "labels_at_recorder"}, …],
     "blockers":  [{"format", "reason", "tool", "unlocks", "example": {"file", "detail"}}, …],  # most first
     "files":     [{"file", "format", "calls", "labels", "dropped", "lost"}, …]}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from harnessfit.core.rejection import Reason

if TYPE_CHECKING:
    from harnessfit.convert.draft import CallDropped
    from harnessfit.convert.gates import GateFinding
    from harnessfit.core.trajectory import Trajectory

__all__ = [
    "CallFates",
    "call_fates",
    "FileYield",
    "YieldReport",
    "render_yield",
    "write_yield",
    "LABEL",
    "recorded_lines",
]

LABEL = "label"
_DROP = "drop:"
Kind = tuple[str, str | None]  # (reason, source tool)


@dataclass
class CallFates:
    """What became of each source call of one trajectory: ``keys`` (identity within the unit), ``fates``
    (``"label"``, ``"drop:<policy>"`` or a lost reason), ``unlock`` (the blocker kind that alone would make it a
    label, or ``None``), ``examples`` (one detail per blocker kind), and whether the trajectory is a ``side_branch``
    whose calls may repeat an earlier trajectory's. For a Pi session, ``recorded`` names the Pis that could have
    recorded it (``harness.recorded``) and ``at_recorder`` says per call whether it is a label once no version
    difference cuts the trajectory: what targeting a Pi that recorded it gives, from this conversion's own findings
    (all but ``harness_version_mismatch`` stay)."""

    keys: list[tuple[str, str, int]] = field(default_factory=list)
    fates: list[str] = field(default_factory=list)
    unlock: list[Kind | None] = field(default_factory=list)
    examples: dict[Kind, str] = field(default_factory=dict)
    side_branch: bool = False
    recorded: str | None = None
    recorded_texts: str | None = None
    at_recorder: list[bool] = field(default_factory=list)
    content: list[bool] = field(default_factory=list)
    """Per call: a label whose context holds an altered result (tier ``content``)."""

    @property
    def read(self) -> int:
        return len(self.fates)

    @property
    def labels(self) -> int:
        return sum(1 for f in self.fates if f == LABEL)


def _kind(f: GateFinding) -> Kind:
    return (f.reason.value, f.tool)


def call_fates(
    traj: Trajectory,
    findings: Sequence[GateFinding],
    cut: int | None,
    dropped: Sequence[CallDropped],
    recorded: str | None = None,
    altered: Sequence[int] = (),
    recorded_texts: str | None = None,
    refused: Sequence[int] = (),
    marked: Sequence[int] = (),
) -> CallFates:
    """The fate of every source call of ``traj`` given the gates' ``findings`` (``cut``: the smallest
    ``GateFinding.cut``, ``None`` when no finding limits the labels) and the calls the builder dropped; ``recorded``: a
    Pi session's recording Pis (``CallFates.at_recorder`` is then filled); ``altered``: the steps of results on the
    wire rendered from altered output (a label after one is of tier ``content``); ``recorded_texts``: the releases its
    Pi-authored texts fit (``Recorded.texts_label``); ``refused``: the steps whose turn holds a call Pi refused, kept
    in the context with its refusal (``convert.draft.CallRefusedInContext``): their calls are lost as labels
    (``arguments_double_encoded``) without cutting the ones after them; ``marked``: the steps the session marks as
    context only (``Draft.marked_context_only``), lost as labels (``marked_context_only``) the same way."""
    out = CallFates(side_branch="side_branch" in traj.flags, recorded=recorded, recorded_texts=recorded_texts)
    drops = {(d.step, d.index): d.policy for d in dropped} if dropped else None
    cutting = sorted((f for f in findings if f.cut is not None), key=lambda f: f.cut) if findings else []  # type: ignore[arg-type,return-value]
    kinds: list[Kind] = []
    for f in cutting:
        k = _kind(f)
        if k not in out.examples:
            out.examples[k] = f.detail
            kinds.append(k)
    # the cut each blocker kind leaves when it alone is removed
    without = {k: min((f.cut for f in cutting if _kind(f) != k), default=None) for k in kinds}  # type: ignore[type-var]
    seen: dict[tuple[str, str], int] = {}
    keys, fates, unlocks = out.keys, out.fates, out.unlock
    aborted = Reason.aborted_or_error_turn.value
    refused_steps = set(refused)
    marked_steps = set(marked)

    def lost_at(i: int) -> tuple[str, Kind | None]:
        reason = cutting[0].reason.value
        for f in cutting:  # the nearest problem at or before step i
            if f.cut <= i:  # type: ignore[operator]
                reason = f.reason.value
            else:
                break
        unlock = next((k for k in kinds if without[k] is None or without[k] > i), None)  # type: ignore[operator]
        return reason, unlock

    for i, step in enumerate(traj.steps):
        if step.role != "assistant" or (step.meta and step.meta.get("history_only")):
            continue  # a history-only step (kept by a Pi compaction) is counted in the epoch that wrote it
        calls = step.tool_calls
        folded = step.meta.get("folded_calls") if step.meta else None
        if not calls and not folded:
            continue
        if step.stop_reason in ("aborted", "error"):
            fate, unlock = aborted, None
        elif (cut is None or i < cut) and i in refused_steps:
            fate, unlock = Reason.arguments_double_encoded.value, None
        elif (cut is None or i < cut) and i in marked_steps:
            fate, unlock = Reason.marked_context_only.value, None
        elif cut is None or i < cut:
            fate, unlock = LABEL, None
        else:
            fate, unlock = lost_at(i)
        named = [(c.id, c.name) for c in calls]
        if folded:
            named += [(f"folded@{i}", str(n)) for n in folded]
        for idn in named:
            n = seen.get(idn, 0) + 1
            seen[idn] = n
            keys.append((idn[0], idn[1], n))
        if drops is not None and fate == LABEL:
            fates.extend(_DROP + drops[(i, k)] if (i, k) in drops else fate for k in range(len(named)))
        else:
            fates.extend([fate] * len(named))
        unlocks.extend([unlock] * len(named))
    for reason, n in sorted(traj.skipped_calls.items()):
        for j in range(n):
            keys.append((f"skipped:{reason}", "", j + 1))
            fates.append(reason)
            unlocks.append(None)
    if recorded is not None:
        out.at_recorder = _at_recorder(traj, cutting, fates)
    if altered:
        out.content = _content_labels(traj, min(altered), fates)
    return out


def _content_labels(traj: Trajectory, first: int, fates: Sequence[str]) -> list[bool]:
    """Per call (in ``call_fates``' order): a label of an assistant step after ``first``, the first altered result."""
    out: list[bool] = []
    for i, step in enumerate(traj.steps):
        if step.role != "assistant" or (step.meta and step.meta.get("history_only")):
            continue
        n = len(step.tool_calls) + len((step.meta.get("folded_calls") if step.meta else None) or ())
        start = len(out)
        out.extend([i > first and fates[start + k] == LABEL for k in range(n)])
    return out + [False] * (len(fates) - len(out))


def _at_recorder(traj: Trajectory, cutting: Sequence[GateFinding], fates: Sequence[str]) -> list[bool]:
    """Per call (in ``call_fates``' order): a label once the ``harness_version_mismatch`` findings are gone."""
    mismatch = Reason.harness_version_mismatch
    rest = min((f.cut for f in cutting if f.reason != mismatch), default=None)  # type: ignore[type-var]
    out: list[bool] = []
    for i, step in enumerate(traj.steps):
        if step.role != "assistant" or (step.meta and step.meta.get("history_only")):
            continue
        n = len(step.tool_calls) + len((step.meta.get("folded_calls") if step.meta else None) or ())
        ok = step.stop_reason not in ("aborted", "error") and (rest is None or i < rest)
        first = len(out)
        out.extend([ok and fates[first + k] in (LABEL, mismatch.value) for k in range(n)])
    return out + [False] * (len(fates) - len(out))


@dataclass
class FileYield:
    """The calls of one file (unit): read, kept as labels, dropped by policy, lost by reason; blockers by the calls
    they would unlock."""

    file: str
    format: str
    calls: int = 0
    labels: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    lost: Counter[str] = field(default_factory=Counter)
    blockers: Counter[Kind] = field(default_factory=Counter)
    examples: dict[Kind, str] = field(default_factory=dict)
    recorded: str | None = None  # a Pi session's recording Pis (``CallFates.recorded``)
    recorded_texts: str | None = None  # the releases its Pi-authored texts fit (``CallFates.recorded_texts``)
    at_recorder: int = 0  # its calls that are labels when targeting a Pi that recorded it
    content_labels: int = 0  # its labels of tier content (the rest are byte)
    _seen: set[tuple[str, str, int]] = field(default_factory=set, repr=False)

    def add(self, fates: CallFates) -> None:
        """Count one trajectory's calls (a side branch's calls that an earlier trajectory holds are not counted
        again)."""
        self.recorded = self.recorded or fates.recorded
        self.recorded_texts = self.recorded_texts or fates.recorded_texts
        at_recorder = fates.at_recorder or [False] * len(fates.fates)
        content = fates.content or [False] * len(fates.fates)
        for key, fate, unlock, rec, altered in zip(
            fates.keys, fates.fates, fates.unlock, at_recorder, content, strict=True
        ):
            if fates.side_branch and key in self._seen:
                continue
            self._seen.add(key)
            self.calls += 1
            self.at_recorder += rec
            if fate == LABEL:
                self.labels += 1
                self.content_labels += altered
            elif fate.startswith(_DROP):
                self.dropped[fate[len(_DROP) :]] += 1
            else:
                self.lost[fate] += 1
                if unlock is not None:
                    self.blockers[unlock] += 1
                    self.examples.setdefault(unlock, fates.examples.get(unlock, ""))

    def __getstate__(self) -> dict[str, Any]:  # crosses the worker pipe without the identity set
        state = dict(self.__dict__)
        state["_seen"] = set()
        return state

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "format": self.format,
            "calls": self.calls,
            "labels": self.labels,
            "dropped": dict(sorted(self.dropped.items())),
            "lost": _ordered(self.lost),
        }

    @property
    def holds(self) -> bool:
        return self.calls == self.labels + sum(self.dropped.values()) + sum(self.lost.values())


def _ordered(lost: Counter[str]) -> dict[str, int]:
    """Lost counts in ``Reason`` order, then any reader reason alphabetically."""
    order = {r.value: i for i, r in enumerate(Reason)}
    return {k: lost[k] for k in sorted(lost, key=lambda k: (order.get(k, len(order)), k)) if lost[k]}


@dataclass
class YieldReport:
    """Every file's yield, and the totals, per format and blocker. ``fidelity``: the run's tier; at ``content`` the
    labels are also counted per tier (``labels_by_fidelity``); a ``byte`` run writes what runs wrote before tiers."""

    files: list[FileYield] = field(default_factory=list)
    fidelity: str = "byte"

    def add(self, fy: FileYield) -> None:
        self.files.append(fy)

    @property
    def calls(self) -> int:
        return sum(f.calls for f in self.files)

    @property
    def labels(self) -> int:
        return sum(f.labels for f in self.files)

    def _sum(self, files: Iterable[FileYield]) -> dict[str, Any]:
        files = list(files)
        dropped: Counter[str] = Counter()
        lost: Counter[str] = Counter()
        for f in files:
            dropped.update(f.dropped)
            lost.update(f.lost)
        labels = sum(f.labels for f in files)
        out = {
            "files": len(files),
            "calls": sum(f.calls for f in files),
            "labels": labels,
            "dropped": dict(sorted(dropped.items())),
            "lost": _ordered(lost),
        }
        if self.fidelity == "content":
            content = sum(f.content_labels for f in files)
            out["labels_by_fidelity"] = {"byte": labels - content, "content": content}
        return out

    def _recorded(self) -> list[dict[str, Any]]:
        """Per set of Pis that could have recorded a Pi session: its files, calls, labels at this run's target and
        labels when targeting one of those Pis (``labels_at_recorder``)."""
        groups: dict[tuple[str, str], dict[str, Any]] = {}
        for f in self.files:
            if f.recorded is not None and f.calls:
                g = groups.get((f.recorded, f.recorded_texts or ""))
                if g is None:
                    g = groups[(f.recorded, f.recorded_texts or "")] = {
                        "versions": f.recorded,
                        **({"texts_fit": f.recorded_texts} if f.recorded_texts else {}),
                        "files": 0,
                        "calls": 0,
                        "labels": 0,
                        "labels_at_recorder": 0,
                    }
                g["files"] += 1
                g["calls"] += f.calls
                g["labels"] += f.labels
                g["labels_at_recorder"] += f.at_recorder
        return [groups[k] for k in sorted(groups)]

    def as_dict(self) -> dict[str, Any]:
        formats = sorted({f.format for f in self.files})
        ranked: Counter[tuple[str, str, str | None]] = Counter()
        example: dict[tuple[str, str, str | None], dict[str, str]] = {}
        for f in self.files:
            for (reason, tool), n in f.blockers.items():
                key = (f.format, reason, tool)
                ranked[key] += n
                example.setdefault(key, {"file": f.file, "detail": f.examples.get((reason, tool), "")})
        blockers = [
            {"format": fmt, "reason": reason, "tool": tool, "unlocks": n, "example": example[(fmt, reason, tool)]}
            for (fmt, reason, tool), n in sorted(
                ranked.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1], kv[0][2] or "")
            )
        ]
        total = self._sum(self.files)
        total.pop("files")
        return {
            "identity_holds": all(f.holds for f in self.files),
            "total": total,
            "by_format": {fmt: self._sum(f for f in self.files if f.format == fmt) for fmt in formats},
            "pi_recorded": self._recorded(),
            "blockers": blockers,
            "files": [f.as_dict() for f in self.files if f.calls],
        }


def _md(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ").replace("<", "&lt;")


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in d.items()) or "-"


def render_yield(report: YieldReport, *, top: int = 30) -> tuple[bytes, str]:
    """``yield.json`` (bytes) and ``yield.md`` (text) of ``report``."""
    doc = report.as_dict()
    t = doc["total"]
    pct = f" ({100 * t['labels'] / t['calls']:.1f} %)" if t["calls"] else ""
    lines = [
        "# Yield: tool calls read → kept as training labels",
        "",
        f"{t['calls']} calls read → {t['labels']} kept as labels{pct}; dropped: {_counts(t['dropped'])}; "
        f"lost: {_counts(t['lost'])}",
        "",
        "| format | files | calls | labels | dropped | lost by reason |",
        "|---|---:|---:|---:|---|---|",
    ]
    for fmt, d in doc["by_format"].items():
        lines.append(
            f"| {fmt} | {d['files']} | {d['calls']} | {d['labels']} | {_counts(d['dropped'])} | "
            f"{_md(_counts(d['lost']))} |"
        )
    if "labels_by_fidelity" in t:
        lines += [
            "",
            "## Labels per fidelity tier",
            "",
            "byte: every byte of the context is known; content: the context holds a result rendered from output "
            "its agent altered in a documented way (trimmed edges, stderr apart, stripped whitespace).",
            "",
            "| format | labels | byte | content |",
            "|---|---:|---:|---:|",
            *(
                f"| {fmt} | {d['labels']} | {d['labels_by_fidelity']['byte']} | {d['labels_by_fidelity']['content']} |"
                for fmt, d in [*doc["by_format"].items(), ("total", t)]
            ),
        ]
    lines += [
        "",
        "## Blockers, by the calls they would unlock",
        "",
        "| format | reason | tool | unlocks | example |",
        "|---|---|---|---:|---|",
    ]
    for b in doc["blockers"][:top]:
        ex = b["example"]
        lines.append(
            f"| {b['format']} | {b['reason']} | {_md(b['tool'] or '-')} | {b['unlocks']} | "
            f"{_md(ex['file'])}: {_md(ex['detail'][:160])} |"
        )
    if len(doc["blockers"]) > top:
        lines.append(f"| … | {len(doc['blockers']) - top} more in yield.json | | | |")
    lines += [
        "",
        "## Files",
        "",
        "| file | format | calls | labels | dropped | lost by reason |",
        "|---|---|---:|---:|---|---|",
    ]
    for f in doc["files"]:
        lines.append(
            f"| {_md(f['file'])} | {f['format']} | {f['calls']} | {f['labels']} | {_counts(f['dropped'])} | "
            f"{_md(_counts(f['lost']))} |"
        )
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n", "\n".join(lines) + "\n"


def recorded_lines(doc: dict[str, Any], card_id: str) -> list[str]:
    """What a convert or build summary says about the Pi sessions in ``doc`` (``yield.json``, or a manifest's yield
    summary) converted with the card ``card_id`` (``pi-1.6.0``, ``pi-1.6.0+tools``): per set of Pis that could have
    recorded them, one line per candidate target with the labels it gives (this run's, or
    ``labels_at_recorder``: every problem of this run but the version differences)."""
    version, plus, profile = card_id.removeprefix("pi-").partition("+")
    suffix = plus + profile
    lines: list[str] = []
    for g in doc.get("pi_recorded") or []:
        files = f"{g['files']} file{'s' if g['files'] != 1 else ''}, {g['calls']} calls"
        if g.get("texts_fit"):
            files += f"; their Pi-authored texts are in the words of pi {g['texts_fit']}"
        if g["versions"] == "unknown":
            lines.append(
                f"Pi sessions recorded by a Pi without a committed card ({files}): converted as "
                f"pi@{version}{suffix}'s, {g['labels']} labels"
            )
            continue
        candidates = g["versions"].split("|")
        lines.append(f"Pi sessions recorded by pi@{g['versions']} ({files}); labels per target:")
        lines.append(f"  pi@{version}{suffix} (this run): {g['labels']}")
        lines += [f"  pi@{v}{suffix}: {g['labels_at_recorder']}" for v in candidates if v != version]
    return lines


def write_yield(out: Path, report: YieldReport, *, top: int = 30) -> dict[str, Any]:
    """Write ``yield.json`` and ``yield.md`` into ``out``; returns the JSON document."""
    data, md = render_yield(report, top=top)
    (out / "yield.json").write_bytes(data)
    (out / "yield.md").write_text(md, encoding="utf-8")
    return orjson.loads(data)
