"""``convert``, the convert stage's entry point, and its output folder: conversations, reject ledger, ledger summary,
accounting.

Files written by ``convert``:
- ``conversations.jsonl`` — one complete ``Conversation`` per line (compact JSON, key order kept);
- ``prefixes.jsonl`` — the exact prefix of each rejected trajectory that holds at least one training label, one
  ``Conversation`` per line with ``meta.prefix`` (why it ends, how many labels); the build exports their SFT records
  and decision points, never as conversations;
- ``ledger.jsonl`` — one ``Rejection`` per line: ``record_id``, ``source``, ``file``, ``line_start``/``line_end``,
  ``reason`` (a ``Reason``), ``detail`` (computed from the data; for a trajectory with more than one blocking call it
  ends with every blocking call by reason and tool, with counts), ``repair_hint``, ``kept_id`` (duplicates), and for a
  trajectory ``calls`` (its source tool calls) and ``labels`` (those kept from its exact prefix);
- ``ledger_summary.md`` — a table by reason (count, an example detail, the repair hint) and by file;
- ``accounting.json`` — per file and in total: ``read``, ``accepted``, ``rejected``, reasons. The identity
  ``read == accepted + rejected`` is asserted for every file and the total before the run reports success;
- ``yield.json`` / ``yield.md`` — per format and per file, tool calls read → kept as labels → dropped → lost by reason,
  and the blockers ranked by the calls they would unlock (``convert.yields``; ``calls == labels + dropped + lost`` is
  asserted too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from harnessfit.convert.ledger import Accounting, AccountingError, write_ledger_summary
from harnessfit.convert.policy import ConvertPolicy
from harnessfit.convert.units import EncodedUnit, iter_encoded_units, unit_size
from harnessfit.convert.wire import DEFAULT_POLICY
from harnessfit.convert.yields import YieldReport, write_yield
from harnessfit.core.rejection import Rejection
from harnessfit.formats.registry import iter_units
from harnessfit.pipeline.output import StagedFolder

__all__ = ["ConvertSummary", "convert", "CONVERT_OUTPUTS", "convert_output_problem"]

CONVERT_OUTPUTS = (
    "conversations.jsonl",
    "prefixes.jsonl",
    "ledger.jsonl",
    "ledger_summary.md",
    "accounting.json",
    "yield.json",
    "yield.md",
)
"""Every file ``convert`` writes: a folder holding only these (and ``accounting.json``) is one it may replace."""


@dataclass
class ConvertSummary:
    """What a convert run produced (paths and counts); ``accounting`` holds the per-file numbers, ``yields`` the
    per-call ones, ``prefixes`` the number of exact prefixes written."""

    out_dir: Path
    card: str
    card_sha256: str
    accounting: Accounting
    yields: YieldReport = field(default_factory=YieldReport)
    prefixes: int = 0

    @property
    def read(self) -> int:
        return self.accounting.read

    @property
    def accepted(self) -> int:
        return self.accounting.accepted

    @property
    def rejected(self) -> int:
        return self.accounting.rejected


def convert(
    inputs: Sequence[Path | str],
    out_dir: Path | str,
    card: Any,
    *,
    workers: int = 1,
    formats: Sequence[str] | None = None,
    on_units: Callable[[int, int], None] | None = None,
    on_unit: Callable[[EncodedUnit], None] | None = None,
    install_dir: str | None = None,
    policy: ConvertPolicy = DEFAULT_POLICY,
) -> ConvertSummary:
    """Convert ``inputs`` into ``out_dir`` (see the module docstring for the files). ``on_units(n, bytes)`` is
    called once with the number and size of units, ``on_unit`` after each unit with its ``EncodedUnit`` (label,
    format, size, counts; for progress bars). Records are serialised where they are converted (in the workers when
    ``workers > 1``); the parent only writes bytes, so the files are identical for any worker count.
    ``install_dir``: the harness folder the system prompt names (default: the card's ``default_install_dir()``).

    The files are written beside ``out_dir`` and swapped in when complete (``pipeline.output.StagedFolder``): an
    existing ``out_dir`` is replaced only when it holds nothing but an earlier convert's files (``CONVERT_OUTPUTS``),
    and a run that fails or is killed leaves it as it was."""
    final = Path(out_dir)
    units = iter_units([Path(p) for p in inputs], formats)  # checks the inputs before anything is written
    with StagedFolder(final, problem=convert_output_problem, inputs=[Path(p) for p in inputs]) as staged:
        summary = _write(
            staged.path,
            units,
            inputs,
            card,
            workers=workers,
            formats=formats,
            on_units=on_units,
            on_unit=on_unit,
            install_dir=install_dir,
            policy=policy,
        )
    summary.out_dir = final
    return summary


def convert_output_problem(folder: Path) -> str | None:
    """Why the non-empty ``folder`` is not an earlier convert's output (``None``: it is; ``convert`` may replace it):
    it must hold ``accounting.json`` and nothing but ``CONVERT_OUTPUTS``."""
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    foreign = [n for n in names if n not in CONVERT_OUTPUTS]
    if foreign or "accounting.json" not in names:
        return (
            f"is not empty and is not a harnessfit convert output (it holds {(foreign or names)[0]}; convert "
            f"writes only {', '.join(CONVERT_OUTPUTS)})"
        )
    return None


def _write(
    out: Path,
    units: list[Any],
    inputs: Sequence[Path | str],
    card: Any,
    *,
    workers: int,
    formats: Sequence[str] | None,
    on_units: Callable[[int, int], None] | None,
    on_unit: Callable[[EncodedUnit], None] | None,
    install_dir: str | None,
    policy: ConvertPolicy,
) -> ConvertSummary:
    """Convert ``units`` into the folder ``out`` (see ``convert``)."""
    if on_units is not None:
        on_units(len(units), sum(unit_size(u.path) for u in units))
    accounting = Accounting()
    yields = YieldReport(fidelity=policy.fidelity)
    examples: dict[str, Rejection] = {}
    prefixes = 0
    with (
        (out / "conversations.jsonl").open("wb") as conv_fh,
        (out / "ledger.jsonl").open("wb") as led_fh,
        (out / "prefixes.jsonl").open("wb") as pre_fh,
    ):
        for res in iter_encoded_units(
            inputs, card, workers=workers, formats=formats, units=units, install_dir=install_dir, policy=policy
        ):
            accounting.add(res)
            if res.yields is not None:
                yields.add(res.yields)
            for reason, example in res.examples.items():
                examples.setdefault(reason, example)
            if res.conversations:
                conv_fh.write(res.conversations)
            if res.ledger:
                led_fh.write(res.ledger)
            if res.prefixes:
                pre_fh.write(res.prefixes)
                prefixes += res.prefixes.count(b"\n")
            if on_unit is not None:
                on_unit(res)
    accounting.check()
    doc_yield = write_yield(out, yields)
    if not doc_yield["identity_holds"]:
        raise AccountingError("yield: calls != labels + dropped + lost for some file (a bug, never bad data)")
    write_ledger_summary(out / "ledger_summary.md", accounting, examples)
    doc = {
        "harness": f"{card.harness}@{card.version}",
        "card": card.id,
        "card_sha256": card.sha256,
        **accounting.as_dict(),
    }
    (out / "accounting.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    return ConvertSummary(
        out_dir=out, card=card.id, card_sha256=card.sha256, accounting=accounting, yields=yields, prefixes=prefixes
    )
