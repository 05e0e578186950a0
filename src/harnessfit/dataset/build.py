"""The build, as a short list of stages: hash inputs → read/convert → sign → redact → dedup (``stages``) → grouped
split → export (``exports.write_exports``) → ledger, card and manifest.

Everything goes through a ``Sink`` (disk for ``build``, comparison for ``verify``), in a fixed order, so the same
inputs and config give the same bytes whatever the worker count. Every stage's seconds go to one ``StageClock``;
they are returned to the caller only and never enter an output file.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
from collections import Counter
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from harnessfit import __version__
from harnessfit.convert.yields import YieldReport, render_yield
from harnessfit.core.conversation import Conversation
from harnessfit.core.jsonio import sha256_file
from harnessfit.core.rejection import Rejection
from harnessfit.dataset.card import render_card
from harnessfit.dataset.config import BuildConfig, InputSpec
from harnessfit.dataset.dedup import Deduper
from harnessfit.dataset.exports import write_exports
from harnessfit.dataset.probe import measure_false_positive_rate, measure_planted_recall
from harnessfit.dataset.redact import Redactor, Scrubber
from harnessfit.dataset.sink import MANIFEST_FORMAT, DiskSink, Sink
from harnessfit.dataset.split import assign_splits, check_no_overlap
from harnessfit.dataset.stages import Collector, Settings, records
from harnessfit.errors import UserError
from harnessfit.formats.registry import Unit, iter_units
from harnessfit.harness.card import HarnessCard, load_harness
from harnessfit.pipeline import StageClock

__all__ = [
    "BuildReport",
    "run_build",
    "build_dataset",
    "input_files",
    "input_sha256",
    "input_rows_of",
    "redaction_settings",
    "side_scrubber",
    "MANIFEST_FORMAT",
]

# The build keeps what it has seen (ledger rows, verdicts, the spool, the LSH index) for the whole run, and each of
# Python's full garbage collections walks all of it: on a 500 MiB input they cost more CPU than the conversion
# itself. Every this many records the objects alive so far are moved out of the collector's view (gc.freeze; still
# freed by reference counting) and the run's end moves them back.
_FREEZE_EVERY = 1024
_PACKAGES = ("pydantic", "orjson", "datasketch", "detect-secrets", "ahocorasick-rs", "numba", "pyarrow")


class BuildReport(BaseModel):
    """What a build did: the manifest body, the produced files, and per-stage seconds (never written to disk).

    ``seconds`` is wall-clock per stage; ``cpu_seconds`` is CPU time (``time.process_time``) over the same spans, which
    a loaded machine does not inflate. With workers > 1 the record stages (convert, redact, and dedup's signing)
    run in the workers and their seconds are summed over them; dedup's in-order check runs in this process."""

    manifest: dict[str, Any]
    seconds: dict[str, float]
    cpu_seconds: dict[str, float] = {}
    input_bytes: int


def input_files(inputs: list[InputSpec]) -> list[Path]:
    """Every regular file the convert stage reads for ``inputs``, sorted: exactly ``iter_units``' walk (hidden files
    included, symlinked folders not followed), a folder unit (e.g. OpenHands V1) contributing every file under it.
    A dangling link or link loop is not a file (its ledger row says why)."""
    out: set[Path] = set()
    for spec in inputs:
        for unit in iter_units([Path(spec.path)], spec.formats):
            if unit.path.is_dir():
                for root, _dirs, files in os.walk(unit.path):
                    out.update(p for p in (Path(root) / f for f in files) if p.is_file())
            elif unit.path.is_file():
                out.add(unit.path)
    return sorted(out)


def input_sha256(path: Path) -> str | None:
    """An input file's SHA-256; ``None`` when it cannot be read (its ledger row says why)."""
    try:
        return sha256_file(path)
    except OSError:
        return None


def redaction_settings(config: BuildConfig, install_dir: str | None) -> dict[str, Any] | None:
    """The ``Redactor`` keyword arguments of a build (``None``: redaction off); ``install_dir`` is kept verbatim."""
    rc = config.redaction
    if not rc.enabled:
        return None
    return {
        "kinds": rc.kinds,
        "high_entropy": rc.high_entropy,
        "detect_secrets": rc.detect_secrets,
        "keep": [install_dir] if install_dir else None,
    }


def side_scrubber(redaction: dict[str, Any] | None, roots: list[str]) -> Scrubber | None:
    """The redaction every output but the conversation exports passes through (``Sink.scrubber``; ``None`` when
    redaction is off): the conversations' rules, keeping the install folder as they do, and the input paths the
    manifest's config names, relative to the dataset folder (``roots``: ``verify`` finds the inputs there)."""
    if redaction is None:
        return None
    return Scrubber(Redactor(**{**redaction, "keep": [*(redaction["keep"] or []), *roots]}))


def input_rows_of(files: list[Path], out_dir: Path, scrubber: Scrubber | None) -> list[dict[str, Any]]:
    """The manifest's row for each input file: its path relative to the dataset folder (redacted like any text, so
    a session folder named after a home folder keeps no user name), SHA-256 (``None``: unreadable) and size."""
    rows = []
    for p in files:
        rel = os.path.relpath(p, out_dir)
        rows.append(
            {
                "path": scrubber.text(rel) if scrubber is not None else rel,
                "sha256": input_sha256(p),
                "bytes": p.stat().st_size,
            }
        )
    return rows


def _versions() -> dict[str, str]:
    v = {"harnessfit": __version__, "python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    for name in _PACKAGES:
        try:
            v[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            v[name] = "missing"
    return v


def _card_info(config: BuildConfig) -> tuple[HarnessCard, dict[str, Any]]:
    card = load_harness(config.harness)
    return card, {"id": card.id, "sha256": card.sha256, "package": card.package, "tools": list(card.default_tools)}


def _unit_groups(inputs: list[InputSpec]) -> list[tuple[list[str] | None, list[Unit]]]:
    """The units to convert and the formats to read them with: one walk over all inputs when they share their
    formats, else one per input, in order."""
    kinds = {tuple(i.formats) if i.formats else None for i in inputs}
    if len(kinds) == 1:
        kind = next(iter(kinds))
        fmts = list(kind) if kind else None
        return [(fmts, iter_units([Path(i.path) for i in inputs], fmts))]
    return [(i.formats, iter_units([Path(i.path)], i.formats)) for i in inputs]


def run_build(
    config: BuildConfig,
    base_dir: Path,
    sink: Sink,
    *,
    out_dir: Path,
    items: Iterable[Conversation | Rejection] | None = None,
    progress: bool = False,
) -> BuildReport:
    """Run the whole build into ``sink``. ``items`` replaces read/convert (tests, in-memory sources)."""
    # freeze only when nothing else in the process uses gc.freeze (unfreeze cannot tell whose objects are whose)
    freeze = gc.get_freeze_count() == 0
    try:
        return _run_build(config, base_dir, sink, out_dir=out_dir, items=items, progress=progress, freeze=freeze)
    finally:
        if freeze:
            gc.unfreeze()  # what the run froze (see _FREEZE_EVERY) is collectable again


def _run_build(
    config: BuildConfig,
    base_dir: Path,
    sink: Sink,
    *,
    out_dir: Path,
    items: Iterable[Conversation | Rejection] | None,
    progress: bool,
    freeze: bool,
) -> BuildReport:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    clock = StageClock()
    inputs = config.resolved_inputs(base_dir)
    files = input_files(inputs)
    card, card_info = _card_info(config)
    # the harness folder the system prompt names: fixed by the config, else this machine's install folder; the
    # resolved value goes into the manifest's config, so ``verify`` rebuilds with the same one anywhere
    install_dir = config.install_dir if config.install_dir is not None else card.default_install_dir()
    card_info["install_dir"] = install_dir
    dc = config.dedup
    redaction = redaction_settings(config, install_dir)
    dedup = {
        "exact": dc.exact,
        "near": dc.near,
        "threshold": dc.threshold,
        "num_perm": dc.num_perm,
        "shingle_size": dc.shingle_size,
        "seed": dc.seed,
    }
    sink.scrubber = side_scrubber(redaction, [os.path.relpath(i.path, out_dir) for i in inputs])
    with clock("hash_inputs"):
        input_rows = input_rows_of(files, out_dir, sink.scrubber)
    settings = Settings(
        card=card,
        install_dir=install_dir,
        redaction=redaction,
        dedup=dedup,
        policy=config.convert.policy(config.fidelity),
    )
    collector = Collector(
        Deduper(**dedup), clock, freeze_every=_FREEZE_EVERY if freeze else 0, fidelity=config.fidelity
    )
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=not progress,
        transient=True,
    ) as bar:
        task = bar.add_task("read → convert → redact → dedup", total=None)
        groups = _unit_groups(inputs) if items is None else None
        for row in records(groups, items, settings, config.workers, clock):
            collector.take(row)
            bar.advance(task)
        collector.accounting.check()
        with clock("split"):
            ratios = config.split.ratios()
            # the exact prefixes' root requests too: a task never crosses splits, whether complete or not
            # a sub-agent's run goes with the session that spawned it (``split``: joined groups)
            assignment = assign_splits(
                [*(g for _, g, _, _ in collector.spool), *collector.prefixes.groups()],
                ratios,
                config.split.seed,
                joined=collector.joined(),
            )
            split_groups = {s: {g for g, a in assignment.items() if a == s} for s in ratios}
            check_no_overlap(split_groups)
            overlap = sum(1 for g in assignment if sum(g in gs for gs in split_groups.values()) > 1)
        with clock("export"):
            per_split, kept_by_source = write_exports(
                sink,
                collector.spool,
                assignment,
                split_groups,
                parquet=config.parquet,
                bar=bar,
                prefixes=collector.prefixes,
                tiers=config.fidelity == "content",
            )
    with clock("manifest"):
        splits = {"seed": config.split.seed, "ratios": ratios, "group_overlap": overlap, "per_split": per_split}
        manifest = _finish(
            sink,
            config,
            collector,
            inputs,
            out_dir,
            input_rows,
            card_info,
            splits,
            kept_by_source,
            redaction,
            with_yield=items is None,
        )
    seconds, cpu_seconds = clock.rounded()
    return BuildReport(
        manifest=manifest, seconds=seconds, cpu_seconds=cpu_seconds, input_bytes=sum(r["bytes"] for r in input_rows)
    )


def _finish(
    sink: Sink,
    config: BuildConfig,
    collector: Collector,
    inputs: list[InputSpec],
    out_dir: Path,
    input_rows: list[dict[str, Any]],
    card_info: dict[str, Any],
    splits: dict[str, Any],
    kept_by_source: Counter[str],
    redaction: dict[str, Any] | None,
    *,
    with_yield: bool,
) -> dict[str, Any]:
    """Write the ledger, its summary, the per-call yield (``with_yield``: the build read the inputs itself), the
    dataset card and the manifest; return the manifest."""
    acc = collector.accounting
    lf = sink.open("ledger.jsonl")
    for rej in collector.ledger:
        lf.mark(rej.record_id)
        lf.write(orjson.dumps(rej.model_dump(mode="json")) + b"\n")
    lf.close()
    reasons = dict(sorted(acc.reasons().items()))
    by_source = Counter(r.source for r in collector.ledger)
    summary = {
        "read": acc.read,
        "accepted": acc.accepted,
        "rejected": acc.rejected,
        "by_reason": reasons,
        "by_source": dict(sorted(by_source.items())),
    }
    _write_whole(sink, "ledger_summary.json", orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
    if with_yield:  # the conversion's per-call accounting, beside the ledger
        yield_json, yield_md = render_yield(collector.yields)
        _write_whole(sink, "yield.json", yield_json)
        _write_whole(sink, "yield.md", yield_md.encode("utf-8"))
    found, replaced = collector.found + collector.prefixes.found, collector.replaced + collector.prefixes.replaced

    probe_redactor = Redactor(**redaction) if redaction is not None else None
    fp = measure_false_positive_rate(probe_redactor) if probe_redactor is not None else None
    recall = measure_planted_recall(probe_redactor) if probe_redactor is not None else None
    semantic = config.semantic_dict()
    semantic["install_dir"] = card_info["install_dir"]
    semantic["inputs"] = [{"path": os.path.relpath(i.path, out_dir), "formats": i.formats} for i in inputs]
    # what the scrubber replaced so far: in the manifest's input paths, the ledger and its summary
    outside = dict(sorted(sink.scrubber.replaced.items())) if sink.scrubber is not None else {}
    config_bytes = orjson.dumps(semantic, option=orjson.OPT_SORT_KEYS)
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "config": semantic,
        "config_sha256": hashlib.sha256(config_bytes).hexdigest(),
        "harness": config.harness,
        "harness_card": card_info,
        "packages": _versions(),
        "inputs": input_rows,
        "counts": {
            "read": acc.read,
            "converted": acc.accepted + acc.dropped,
            "rejected_convert": acc.rejected - acc.dropped,
            "redacted_conversations": collector.redacted,
            "duplicate_exact": reasons.get("duplicate_exact", 0),
            "duplicate_near": reasons.get("duplicate_near", 0),
            "kept": acc.accepted,
            "rejected_by_reason": reasons,
            "kept_by_source": dict(sorted(kept_by_source.items())),
            "prefixes": collector.prefixes.summary(splits["per_split"]),
        },
        "yield": _yield_summary(collector.yields) if with_yield else None,
        "splits": splits,
        "redaction": {
            "enabled": redaction is not None,
            "found": dict(sorted(found.items())),
            "replaced": dict(sorted(replaced.items())),
            "replaced_outside_conversations": outside,
            "kept": _kept(redaction, card_info["install_dir"], [i["path"] for i in semantic["inputs"]]),
            "false_positive": fp.model_dump() if fp else None,
            "planted_recall": recall.model_dump() if recall else None,
        },
    }
    _write_whole(sink, "README.md", render_card(manifest).encode("utf-8"))
    manifest["outputs"] = [
        {"path": f.relpath, "sha256": f.sha256, "bytes": f.size, "records": f.records}
        for f in sorted(sink.files, key=lambda f: f.relpath)
    ]
    _write_whole(sink, "manifest.json", orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
    sink.finish()
    return manifest


def _yield_summary(yields: YieldReport) -> dict[str, Any]:
    """The manifest's (and card's) view of ``yield.json``: totals, per format, and the top blockers."""
    doc = yields.as_dict()
    return {
        "total": doc["total"],
        "by_format": doc["by_format"],
        "identity_holds": doc["identity_holds"],
        "pi_recorded": doc["pi_recorded"],
        "top_blockers": doc["blockers"][:10],
    }


def _kept(redaction: dict[str, Any] | None, install_dir: str | None, roots: list[str]) -> list[dict[str, Any]]:
    """What redaction leaves as written, where, and the kinds of finding it would otherwise have replaced in it (for
    the card): the install folder (system prompts) and the input paths (the manifest's config)."""
    if redaction is None:
        return []
    plain = Redactor(**{**redaction, "keep": None})
    out = [{"text": install_dir, "where": "system_prompt"}] if install_dir else []
    out += [{"text": r, "where": "manifest_inputs"} for r in roots]
    for k in out:
        k["holds"] = sorted({kind for kind, _ in plain.findings(k["text"])})
    return out


def _write_whole(sink: Sink, relpath: str, data: bytes) -> None:
    f = sink.open(relpath)
    f.mark(relpath)
    f.write(data)
    f.close()


def build_dataset(
    config: BuildConfig,
    base_dir: Path,
    *,
    out: Path | None = None,
    items: Iterable[Conversation | Rejection] | None = None,
    progress: bool = False,
) -> BuildReport:
    """Build onto disk: ``out`` (default: ``config.out`` resolved against ``base_dir``). The inputs are checked
    first; the dataset is written beside ``out`` and swapped in only when complete (``DiskSink``), so a build that
    fails or is killed leaves the previous dataset as it was."""
    out_dir = (Path(out) if out is not None else base_dir / config.out).resolve()
    inputs = [Path(i.path) for i in config.resolved_inputs(base_dir)]
    for p in inputs:
        if not p.exists():
            raise UserError(f"input not found: {p}")
    sink = DiskSink(out_dir, inputs=inputs)
    try:
        return run_build(config, base_dir, sink, out_dir=out_dir, items=items, progress=progress)
    except BaseException:
        sink.abort()
        raise
