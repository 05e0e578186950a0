"""The convert run's ledger and accounting: ``Accounting`` (per file ``read``, ``accepted``, ``rejected`` and
reasons, with the identity ``read == accepted + rejected`` checked by ``Accounting.check``) and
``write_ledger_summary`` (``ledger_summary.md``). ``convert.run.convert`` writes them with the rest of the output
folder."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessfit.convert.units import EncodedUnit, UnitResult
from harnessfit.core.conversation import Conversation
from harnessfit.core.rejection import Reason, Rejection

__all__ = ["FileAccount", "Accounting", "write_ledger_summary", "AccountingError"]


class AccountingError(AssertionError):
    """read != accepted + rejected somewhere: a record was dropped or duplicated (a bug, never bad data)."""


@dataclass
class FileAccount:
    file: str
    format: str
    bytes: int = 0
    read: int = 0
    accepted: int = 0
    rejected: int = 0
    reasons: Counter = field(default_factory=Counter)
    dropped: int = 0  # accepted when read, rejected by a later stage (the build's duplicates; not in ``as_dict``)

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "format": self.format,
            "bytes": self.bytes,
            "read": self.read,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "reasons": dict(sorted(self.reasons.items())),
        }


@dataclass
class Accounting:
    """Counts per file and in total, for every stage that reads records and keeps or rejects each: ``add`` takes one
    convert unit's result (objects or encoded), ``record`` one record, ``drop`` a later stage's rejection of a
    record it had accepted; ``check`` asserts ``read == accepted + rejected`` per file and in total."""

    files: list[FileAccount] = field(default_factory=list)
    _by_file: dict[str, FileAccount] = field(default_factory=dict, repr=False)

    def add(self, res: UnitResult | EncodedUnit) -> FileAccount:
        acc = FileAccount(file=res.label, format=res.format, bytes=res.size, read=res.read)
        if isinstance(res, EncodedUnit):
            acc.accepted = res.accepted
            acc.rejected = res.rejected
            acc.reasons.update(res.reasons)
        else:
            for out in res.outputs:
                if isinstance(out, Conversation):
                    acc.accepted += 1
                else:
                    acc.rejected += 1
                    acc.reasons[out.reason.value] += 1
        self.files.append(acc)
        self._by_file.setdefault(acc.file, acc)
        return acc

    def _file(self, file: str, format: str) -> FileAccount:
        acc = self._by_file.get(file)
        if acc is None:
            acc = self._by_file[file] = FileAccount(file=file, format=format)
            self.files.append(acc)
        return acc

    def record(self, file: str, format: str, reason: str | None = None) -> None:
        """One record of ``file`` read: accepted (``reason`` None) or rejected for ``reason``."""
        acc = self._file(file, format)
        acc.read += 1
        if reason is None:
            acc.accepted += 1
        else:
            acc.rejected += 1
            acc.reasons[reason] += 1

    def drop(self, file: str, format: str, reason: str) -> None:
        """A later stage rejects, for ``reason``, a record of ``file`` that was accepted when read."""
        acc = self._file(file, format)
        acc.accepted -= 1
        acc.dropped += 1
        acc.rejected += 1
        acc.reasons[reason] += 1

    @property
    def dropped(self) -> int:
        return sum(f.dropped for f in self.files)

    @property
    def read(self) -> int:
        return sum(f.read for f in self.files)

    @property
    def accepted(self) -> int:
        return sum(f.accepted for f in self.files)

    @property
    def rejected(self) -> int:
        return sum(f.rejected for f in self.files)

    def reasons(self) -> Counter:
        total: Counter = Counter()
        for f in self.files:
            total.update(f.reasons)
        return total

    def check(self) -> None:
        for f in self.files:
            if f.read != f.accepted + f.rejected:
                raise AccountingError(f"{f.file}: read {f.read} != accepted {f.accepted} + rejected {f.rejected}")
        if self.read != self.accepted + self.rejected:
            raise AccountingError(f"total: read {self.read} != accepted {self.accepted} + rejected {self.rejected}")

    def as_dict(self) -> dict[str, Any]:
        by_format: dict[str, dict[str, int]] = {}
        for f in self.files:
            d = by_format.setdefault(f.format, {"files": 0, "read": 0, "accepted": 0, "rejected": 0})
            d["files"] += 1
            d["read"] += f.read
            d["accepted"] += f.accepted
            d["rejected"] += f.rejected
        return {
            "total": {
                "files": len(self.files),
                "bytes": sum(f.bytes for f in self.files),
                "read": self.read,
                "accepted": self.accepted,
                "rejected": self.rejected,
            },
            "identity_holds": all(f.read == f.accepted + f.rejected for f in self.files)
            and self.read == self.accepted + self.rejected,
            "by_reason": dict(sorted(self.reasons().items())),
            "by_format": dict(sorted(by_format.items())),
            "files": [f.as_dict() for f in self.files],
        }


def write_ledger_summary(path: Path, accounting: Accounting, examples: dict[str, Rejection]) -> None:
    """Markdown table by reason (in gate order) and by file."""
    reasons = accounting.reasons()
    lines = [
        "# Reject ledger summary",
        "",
        f"read {accounting.read} = accepted {accounting.accepted} + rejected {accounting.rejected}",
        "",
        "| reason | count | example | repair hint |",
        "|---|---:|---|---|",
    ]
    for reason in Reason:
        n = reasons.get(reason.value, 0)
        if not n:
            continue
        ex = examples[reason.value]
        detail = ex.detail.replace("|", "\\|").replace("\n", " ")[:160]
        hint = ex.repair_hint.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {reason.value} | {n} | {ex.file}: {detail} | {hint} |")
    lines += ["", "| file | format | read | accepted | rejected |", "|---|---|---:|---:|---:|"]
    for f in accounting.files:
        lines.append(f"| {f.file} | {f.format} | {f.read} | {f.accepted} | {f.rejected} |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
