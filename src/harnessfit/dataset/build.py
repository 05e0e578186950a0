"""The build: read/convert → redact → dedup → grouped split → export, plus ledger, card and manifest.

Everything goes through a ``Sink`` (disk for ``build``, comparison for ``verify``), in a fixed order, so the same
inputs and config give the same bytes whatever the worker count. Timings are returned to the caller only; they
never enter an output file.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from importlib import metadata
from itertools import islice
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from harnessfit.core.conversation import Conversation, ConversationMeta
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.convert.runner import iter_convert
from harnessfit.convert.yields import YieldReport, render_yield
from harnessfit.dataset.card import render_card
from harnessfit.dataset.config import BuildConfig, InputSpec
from harnessfit.dataset.dedup import Deduper
from harnessfit.dataset.exports import PARQUET_SCHEMAS, ConversationExport, ParquetOut, conversation_row
from harnessfit.dataset.prefixes import PrefixSpool, divert
from harnessfit.dataset.probe import measure_false_positive_rate
from harnessfit.dataset.redact import Redactor
from harnessfit.dataset.sink import Sink
from harnessfit.dataset.split import assign_splits, check_no_overlap
from harnessfit.harness.card import HarnessCard, load_card
from harnessfit.core.jsonio import sha256_file
from harnessfit.formats.registry import iter_units

__all__ = ["BuildReport", "run_build", "build_dataset", "input_files", "MANIFEST_FORMAT"]

MANIFEST_FORMAT = "harnessfit-dataset/1"
# The build keeps what it has seen (ledger rows, verdicts, the spool, the LSH index) for the whole run, and each of
# Python's full garbage collections walks all of it: on a 500 MiB input they cost more CPU than the conversion
# itself. Every this many records the objects alive so far are moved out of the collector's view (gc.freeze; still
# freed by reference counting) and the run's end moves them back.
_FREEZE_EVERY = 1024
_PACKAGES = ("pydantic", "orjson", "datasketch", "detect-secrets", "ahocorasick-rs", "numba", "pyarrow")


class BuildReport(BaseModel):
    """What a build did: the manifest body, the produced files, and per-stage seconds (never written to disk).

    ``seconds`` is wall-clock per stage; ``cpu_seconds`` is CPU time (``time.process_time``) over the same spans, which
    a loaded machine does not inflate. With workers > 1 a worker stage's CPU seconds are summed over the workers and
    ``convert`` counts only the parent's share (waiting on the conversion pool costs no CPU)."""

    manifest: dict[str, Any]
    seconds: dict[str, float]
    cpu_seconds: dict[str, float] = {}
    input_bytes: int


def input_files(inputs: list[InputSpec]) -> list[Path]:
    """Every regular file the convert stage reads for ``inputs``, sorted: exactly ``iter_units``' walk (hidden files
    included, symlinked folders not followed), a folder unit (e.g. OpenHands V1) contributing every file under it."""
    out: set[Path] = set()
    for spec in inputs:
        for unit in iter_units([Path(spec.path)], spec.formats):
            if unit.path.is_dir():
                for root, dirs, files in os.walk(unit.path):
                    out.update(p for p in (Path(root) / f for f in files) if p.is_file())
            else:
                out.add(unit.path)
    return sorted(out)


def _versions() -> dict[str, str]:
    from harnessfit import __version__

    v = {"harnessfit": __version__, "python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    for name in _PACKAGES:
        try:
            v[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            v[name] = "missing"
    return v


def _card_info(config: BuildConfig) -> tuple[HarnessCard, dict[str, Any]]:
    card = load_card(config.harness, config.harness_version)
    return card, {"id": card.id, "sha256": card.sha256}


def _convert_stream(inputs: list[InputSpec], card: HarnessCard, workers: int, install_dir: str, policy: Any,
                    yields: YieldReport) -> Iterator[Conversation | Rejection]:
    """Every record of the inputs and, after each unit's records, the exact prefixes of its rejected trajectories
    (``dataset.prefixes`` takes them out of the stream); ``yields`` collects the per-call accounting."""
    kinds = {tuple(i.formats) if i.formats else None for i in inputs}
    kw: dict[str, Any] = {"workers": workers, "install_dir": install_dir, "prefixes": True, "policy": policy,
                          "yields": yields}
    if len(kinds) == 1:
        fmts = next(iter(kinds))
        yield from iter_convert([Path(i.path) for i in inputs], card, formats=list(fmts) if fmts else None, **kw)
    else:
        for i in inputs:
            yield from iter_convert([Path(i.path)], card, formats=i.formats, **kw)


# -- redaction + hashing, possibly in worker processes --------------------------------------------------------------
_W: dict[str, Any] = {}
_SIGN_BATCH = 32  # conversations signed per compiled call in pre-marking (a call has a fixed cost)


def _init_worker(red_kwargs: dict[str, Any] | None, dedup_kwargs: dict[str, Any]) -> None:
    _W["redactor"] = Redactor(**red_kwargs) if red_kwargs is not None else None
    _W["deduper"] = Deduper(**dedup_kwargs)


def _work(item: Any) -> tuple[Any, ...]:
    if isinstance(item, Rejection):
        return ("rej", item)
    sig = None
    if isinstance(item, tuple):
        if item[0] == "rawdup":  # ("rawdup", id, meta, first_id): identical input content, nothing to redact
            return item
        _, item, sig = item  # ("conv", conversation, its dedup signature from pre-marking)
    t0, c0 = time.perf_counter(), time.process_time()
    red = _W["redactor"]
    conv, found, replaced, changed = item, Counter(), Counter(), False
    if red is not None:
        res = red.redact(item)
        conv, found, replaced, changed = res.conversation, res.found, res.replaced, res.conversation is not item
    t1, c1 = time.perf_counter(), time.process_time()
    # the pre-marking's signature is still valid when redaction changed nothing (the common case)
    if sig is None or changed:
        sig = _W["deduper"].signature(conv)
    t2, c2 = time.perf_counter(), time.process_time()
    body = orjson.dumps(conv.model_dump(mode="json"))
    return ("conv", conv.id, conv.meta, body, dict(found), dict(replaced), changed, sig, t1 - t0, t2 - t1,
            c1 - c0, c2 - c1)


def _processed(stream: Iterable[Conversation | Rejection], config: BuildConfig,
               red_kwargs: dict[str, Any] | None, dedup_kwargs: dict[str, Any], clock: dict[str, float],
               cpu: dict[str, float]) -> Iterator[tuple]:
    def timed(it: Iterable[Any]) -> Iterator[Any]:
        it = iter(it)
        while True:
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                x = next(it)
            except StopIteration:
                return
            clock["convert"] += time.perf_counter() - t0
            cpu["convert"] += time.process_time() - c0
            yield x

    def premark(it: Iterable[Any]) -> Iterator[Any]:
        """Conversations whose unredacted content equals an earlier one's: redaction is per-conversation and
        deterministic, so they are exact duplicates after it too; skip redaction/hashing and resolve them against
        the earlier one's verdict in the main loop (order-preserving, so any worker count gives the same result)."""
        first: dict[str, str] = {}
        signer = Deduper(**dedup_kwargs)
        it = iter(it)
        while batch := list(islice(it, _SIGN_BATCH)):
            convs = [x for x in batch if isinstance(x, Conversation)] if config.dedup.exact else []
            t, c = time.perf_counter(), time.process_time()
            # the near-dup signatures too: still valid where redaction changes nothing
            sigs = iter(signer.signatures(convs) if convs else ())
            clock["dedup"] += time.perf_counter() - t
            cpu["dedup"] += time.process_time() - c
            for item in batch:
                if config.dedup.exact and isinstance(item, Conversation):
                    sig = next(sigs)
                    if sig[0] in first:
                        yield ("rawdup", item.id, item.meta, first[sig[0]])
                        continue
                    first[sig[0]] = item.id
                    yield ("conv", item, sig)
                    continue
                yield item

    if config.workers <= 1:
        _init_worker(red_kwargs, dedup_kwargs)
        for item in premark(timed(stream)):
            yield _work(item)
        return
    import multiprocessing as mp

    with mp.get_context().Pool(config.workers, initializer=_init_worker, initargs=(red_kwargs, dedup_kwargs)) as pool:
        yield from pool.imap(_work, premark(timed(stream)), chunksize=4)


def run_build(config: BuildConfig, base_dir: Path, sink: Sink, *, out_dir: Path,
              items: Iterable[Conversation | Rejection] | None = None, progress: bool = False) -> BuildReport:
    """Run the whole build into ``sink``. ``items`` replaces read/convert (tests, in-memory sources)."""
    # freeze only when nothing else in the process uses gc.freeze (unfreeze cannot tell whose objects are whose)
    freeze = gc.get_freeze_count() == 0
    try:
        return _run_build(config, base_dir, sink, out_dir=out_dir, items=items, progress=progress, freeze=freeze)
    finally:
        if freeze:
            gc.unfreeze()  # what the run froze (see _FREEZE_EVERY) is collectable again


def _run_build(config: BuildConfig, base_dir: Path, sink: Sink, *, out_dir: Path,
               items: Iterable[Conversation | Rejection] | None, progress: bool, freeze: bool) -> BuildReport:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    clock: dict[str, float] = Counter()
    cpu: dict[str, float] = Counter()  # the same spans as ``clock``, in CPU seconds of this process (or its workers)
    inputs = config.resolved_inputs(base_dir)
    files = input_files(inputs)
    t0, c0 = time.perf_counter(), time.process_time()
    input_rows = [{"path": os.path.relpath(p, out_dir), "sha256": sha256_file(p), "bytes": p.stat().st_size} for p in files]
    clock["hash_inputs"] = time.perf_counter() - t0
    cpu["hash_inputs"] = time.process_time() - c0
    card, card_info = _card_info(config)
    # the harness folder the system prompt names: fixed by the config, else this machine's install folder; the
    # resolved value goes into the manifest's config, so ``verify`` rebuilds with the same one anywhere
    install_dir = config.install_dir if config.install_dir is not None else card.default_install_dir()
    card_info["install_dir"] = install_dir
    yields = YieldReport()
    stream = items if items is not None else _convert_stream(inputs, card, config.workers, install_dir,
                                                             config.convert.policy(), yields)

    rc = config.redaction
    red_kwargs = ({"kinds": rc.kinds, "high_entropy": rc.high_entropy, "detect_secrets": rc.detect_secrets,
                   "keep": [install_dir] if install_dir else None}
                  if rc.enabled else None)
    dc = config.dedup
    dedup_kwargs = {"exact": dc.exact, "near": dc.near, "threshold": dc.threshold, "num_perm": dc.num_perm,
                    "shingle_size": dc.shingle_size, "seed": dc.seed}
    deduper = Deduper(**dedup_kwargs)
    prefix_spool = PrefixSpool(Redactor(**red_kwargs) if red_kwargs is not None else None, exact_dedup=dc.exact)
    stream = divert(stream, prefix_spool)  # exact prefixes of rejected trajectories: SFT/DP only (dataset.prefixes)

    ledger: list[Rejection] = []
    verdicts: dict[str, Rejection | None] = {}
    spool: list[tuple[str, str, bytes, str]] = []  # id, group, json bytes, source
    counts: Counter[str] = Counter()
    found: Counter[str] = Counter()
    replaced: Counter[str] = Counter()
    rejected_by_reason: Counter[str] = Counter()
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), disable=not progress, transient=True) as bar:
        task = bar.add_task("read → convert → redact → dedup", total=None)
        for row in _processed(stream, config, red_kwargs, dedup_kwargs, clock, cpu):
            counts["read"] += 1
            if freeze and counts["read"] % _FREEZE_EVERY == 0:
                gc.freeze()  # see _FREEZE_EVERY
            bar.advance(task)
            if row[0] == "rej":
                counts["rejected_convert"] += 1
                rejected_by_reason[str(row[1].reason)] += 1
                ledger.append(row[1])
                continue
            if row[0] == "rawdup":
                _, cid, meta, first_id = row
                prior = verdicts[first_id]
                dup = Rejection(record_id=cid, source=meta.source, file=meta.file, line_start=meta.line_start,
                                line_end=meta.line_end, reason=prior.reason if prior else Reason.duplicate_exact,
                                detail="identical to an earlier conversation after normalisation",
                                repair_hint="nothing to repair: the kept twin carries the same work",
                                kept_id=prior.kept_id if prior else first_id)
                counts["converted"] += 1
                counts[str(dup.reason)] += 1
                rejected_by_reason[str(dup.reason)] += 1
                ledger.append(dup)
                continue
            _, cid, meta, body, f, r, changed, sig, t_red, t_sig, c_red, c_sig = row
            clock["redact"] += t_red
            clock["dedup"] += t_sig
            cpu["redact"] += c_red
            cpu["dedup"] += c_sig
            counts["converted"] += 1
            counts["redacted_conversations"] += int(changed)
            found.update(f)
            replaced.update(r)
            t, c = time.perf_counter(), time.process_time()
            dup = deduper.check_signed(cid, meta if isinstance(meta, ConversationMeta) else ConversationMeta(**meta), sig)
            clock["dedup"] += time.perf_counter() - t
            cpu["dedup"] += time.process_time() - c
            verdicts[cid] = dup
            if dup is not None:
                counts[str(dup.reason)] += 1
                rejected_by_reason[str(dup.reason)] += 1
                ledger.append(dup)
                continue
            spool.append((cid, meta.root_request_id, body, meta.source))

        # -- split ----------------------------------------------------------------------------------------------
        t, c = time.perf_counter(), time.process_time()
        ratios = config.split.ratios()
        assignment = assign_splits([*(g for _, g, _, _ in spool), *prefix_spool.groups()], ratios, config.split.seed)
        split_groups = {s: {g for g, a in assignment.items() if a == s} for s in ratios}
        check_no_overlap(split_groups)
        overlap = sum(1 for g in assignment if sum(g in gs for gs in split_groups.values()) > 1)
        clock["split"] = time.perf_counter() - t
        cpu["split"] = time.process_time() - c

        # -- export ---------------------------------------------------------------------------------------------
        t, c = time.perf_counter(), time.process_time()
        per_split: dict[str, dict[str, int]] = {}
        kept_by_source: Counter[str] = Counter()
        wtask = bar.add_task("export", total=len(spool))
        for split in ratios:
            cf = sink.open(f"conversations/{split}.jsonl")
            sf = sink.open(f"sft/{split}.jsonl")
            df = sink.open(f"decision_points/{split}.jsonl")
            pq_out = ({k: ParquetOut(sink.open(f"parquet/{k}/{split}.parquet"), PARQUET_SCHEMAS[k])
                       for k in ("conversations", "sft", "decision_points")} if config.parquet else None)
            n = {"groups": len(split_groups[split]), "conversations": 0, "sft": 0, "decision_points": 0}
            for cid, group, body, source in spool:
                if assignment[group] != split:
                    continue
                conv = orjson.loads(body)
                cf.mark(cid)
                cf.write(body + b"\n")
                n["conversations"] += 1
                kept_by_source[source] += 1
                ex = ConversationExport(conv, split)
                for rid, line, row in ex.sft():
                    sf.mark(rid)
                    sf.write(line + b"\n")
                    n["sft"] += 1
                    if pq_out:
                        pq_out["sft"].add(row)
                for rid, line, row in ex.decision_points():
                    df.mark(rid)
                    df.write(line + b"\n")
                    n["decision_points"] += 1
                    if pq_out:
                        pq_out["decision_points"].add(row)
                if pq_out:
                    pq_out["conversations"].add(conversation_row(conv))
                bar.advance(wtask)
            n["prefix_sft"], n["prefix_decision_points"] = prefix_spool.export(
                split, assignment, sf, df, pq_out)
            n["sft"] += n["prefix_sft"]
            n["decision_points"] += n["prefix_decision_points"]
            for f in (cf, sf, df):
                f.close()
            for p in (pq_out or {}).values():
                p.close()
            per_split[split] = n
        clock["export"] = time.perf_counter() - t
        cpu["export"] = time.process_time() - c

    # -- ledger, card, manifest -----------------------------------------------------------------------------------
    t, c = time.perf_counter(), time.process_time()
    counts["kept"] = len(spool)
    rejected = counts["rejected_convert"] + counts["duplicate_exact"] + counts["duplicate_near"]
    if counts["kept"] + rejected != counts["read"]:
        raise AssertionError(f"accounting broken: kept {counts['kept']} + rejected {rejected} != read {counts['read']}")
    lf = sink.open("ledger.jsonl")
    for rej in ledger:
        lf.mark(rej.record_id)
        lf.write(orjson.dumps(rej.model_dump(mode="json")) + b"\n")
    lf.close()
    found.update(prefix_spool.found)
    replaced.update(prefix_spool.replaced)
    if items is None:  # the per-call accounting of the conversion, beside the ledger
        yield_json, yield_md = render_yield(yields)
        _write_whole(sink, "yield.json", yield_json)
        _write_whole(sink, "yield.md", yield_md.encode("utf-8"))
    by_source: Counter[str] = Counter(r.source for r in ledger)
    summary = {"read": counts["read"], "accepted": counts["kept"], "rejected": rejected,
               "by_reason": dict(sorted(rejected_by_reason.items())), "by_source": dict(sorted(by_source.items()))}
    _write_whole(sink, "ledger_summary.json", orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")

    fp = measure_false_positive_rate(Redactor(**red_kwargs)) if red_kwargs is not None else None
    semantic = config.semantic_dict()
    semantic["install_dir"] = install_dir
    semantic["inputs"] = [{"path": os.path.relpath(i.path, out_dir), "formats": i.formats} for i in inputs]
    config_bytes = orjson.dumps(semantic, option=orjson.OPT_SORT_KEYS)
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "config": semantic,
        "config_sha256": hashlib.sha256(config_bytes).hexdigest(),
        "harness_card": card_info,
        "packages": _versions(),
        "inputs": input_rows,
        "counts": {
            "read": counts["read"], "converted": counts["converted"], "rejected_convert": counts["rejected_convert"],
            "redacted_conversations": counts["redacted_conversations"], "duplicate_exact": counts["duplicate_exact"],
            "duplicate_near": counts["duplicate_near"], "kept": counts["kept"],
            "rejected_by_reason": dict(sorted(rejected_by_reason.items())),
            "kept_by_source": dict(sorted(kept_by_source.items())),
            "prefixes": prefix_spool.summary(),
        },
        "yield": _yield_summary(yields) if items is None else None,
        "splits": {"seed": config.split.seed, "ratios": ratios, "group_overlap": overlap, "per_split": per_split},
        "redaction": {"enabled": red_kwargs is not None, "found": dict(sorted(found.items())),
                      "replaced": dict(sorted(replaced.items())),
                      "false_positive": fp.model_dump() if fp else None},
    }
    _write_whole(sink, "README.md", render_card(manifest).encode("utf-8"))
    manifest["outputs"] = [{"path": f.relpath, "sha256": f.sha256, "bytes": f.size, "records": f.records}
                           for f in sorted(sink.files, key=lambda f: f.relpath)]
    _write_whole(sink, "manifest.json", orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
    sink.finish()
    clock["manifest"] = time.perf_counter() - t
    cpu["manifest"] = time.process_time() - c
    return BuildReport(manifest=manifest, seconds={k: round(v, 4) for k, v in clock.items()},
                       cpu_seconds={k: round(v, 4) for k, v in cpu.items()},
                       input_bytes=sum(r["bytes"] for r in input_rows))


def _yield_summary(yields: YieldReport) -> dict[str, Any]:
    """The manifest's (and card's) view of ``yield.json``: totals and per format."""
    doc = yields.as_dict()
    return {"total": doc["total"], "by_format": doc["by_format"], "identity_holds": doc["identity_holds"],
            "top_blockers": doc["blockers"][:10]}


def _write_whole(sink: Sink, relpath: str, data: bytes) -> None:
    f = sink.open(relpath)
    f.mark(relpath)
    f.write(data)
    f.close()


def build_dataset(config: BuildConfig, base_dir: Path, *, out: Path | None = None,
                  items: Iterable[Conversation | Rejection] | None = None, progress: bool = False) -> BuildReport:
    """Build onto disk: ``out`` (default: ``config.out`` resolved against ``base_dir``)."""
    from harnessfit.dataset.sink import DiskSink

    out_dir = (Path(out) if out is not None else base_dir / config.out).resolve()
    return run_build(config, base_dir, DiskSink(out_dir), out_dir=out_dir, items=items, progress=progress)
