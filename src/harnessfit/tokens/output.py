"""What ``audit`` leaves on disk: ``audit.json``, ``audit.md``, ``lengths.png``, ``violations.jsonl``, ``breaks.jsonl``
(where and why a trajectory's chain ended before its next action), ``manifest.json``,
``tokenized/{split}.parquet`` + ``tokenized/meta.json`` (read unchanged by training) and ``tokenizer/`` (the
tokenizer with the training template, loaded by training and serving so all three use the same template)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harnessfit.core import jsonio
from harnessfit.models import model_revision, stop_token_ids

__all__ = ["TOKENIZED_FORMAT", "TOKENIZED_SCHEMA", "write_outputs", "read_tokenized", "render_markdown"]

# 2: rows are chains (one or more actions; the action_* columns say where each action's supervised tokens are and
# how long its own record is). 1 (no action_* columns): one row per action.
TOKENIZED_FORMAT = "harnessfit-tokenized/2"
TOKENIZED_SCHEMA = pa.schema(
    [
        ("id", pa.string()),  # the chain's first action's record id
        ("input_ids", pa.list_(pa.int32())),
        ("assistant_masks", pa.list_(pa.int8())),
        ("n_tokens", pa.int32()),
        ("n_supervised", pa.int32()),
        ("source", pa.string()),
        ("group", pa.string()),
        ("conversation_id", pa.string()),
        ("action_ids", pa.list_(pa.string())),
        ("action_starts", pa.list_(pa.int32())),  # first supervised token of each action
        ("action_ends", pa.list_(pa.int32())),  # one past its last supervised token
        ("action_lengths", pa.list_(pa.int32())),  # tokens of its own record: input_ids[:length] is that record
    ]
)


def _write_split(path: Path, chains: list) -> None:
    rows = sorted(chains, key=lambda c: c.id)
    i32, i8 = pa.list_(pa.int32()), pa.list_(pa.int8())
    table = pa.table(
        {
            "id": pa.array([c.id for c in rows], pa.string()),
            "input_ids": pa.array([c.input_ids for c in rows], type=i32) if rows else pa.array([], i32),
            "assistant_masks": pa.array([c.mask() for c in rows], type=i8) if rows else pa.array([], i8),
            "n_tokens": pa.array([c.n_tokens for c in rows], pa.int32()),
            "n_supervised": pa.array([c.n_supervised for c in rows], pa.int32()),
            "source": pa.array([c.source for c in rows], pa.string()),
            "group": pa.array([c.group for c in rows], pa.string()),
            "conversation_id": pa.array([c.conversation_id for c in rows], pa.string()),
            "action_ids": pa.array([[a.id for a in c.actions] for c in rows], pa.list_(pa.string())),
            "action_starts": pa.array([[a.start for a in c.actions] for c in rows], i32),
            "action_ends": pa.array([[a.end for a in c.actions] for c in rows], i32),
            "action_lengths": pa.array([[a.length for a in c.actions] for c in rows], i32),
        },
        schema=TOKENIZED_SCHEMA,
    )
    pq.write_table(table, path, compression="zstd")


def read_tokenized(out_dir: Path, split: str) -> pa.Table:
    return pq.read_table(Path(out_dir) / "tokenized" / f"{split}.parquet")


def _histogram(path: Path, lengths: list[int], caps: list[int], applied: int | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5), dpi=100)
    ax.hist(lengths or [0], bins=40, color="#4477aa")
    for cap in caps:
        if lengths and cap <= max(lengths) * 1.5:
            ax.axvline(cap, color="#cc3311" if cap == applied else "#999999", linestyle="--", linewidth=1)
    ax.set_xlabel("tokens per record (prompt + action)")
    ax.set_ylabel("records")
    ax.set_title("Record lengths" + (f" — cap {applied}" if applied else ""))
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def render_markdown(report) -> str:
    r = report
    lines = [
        f"# Token audit: {r.dataset}",
        "",
        f"Model `{r.model}`, template `{r.template['name']}` (sha256 `{r.template['sha256'][:12]}…`), "
        f"think in labels: {r.think_in_labels}. Target harness: {r.harness or 'not recorded'}.",
        "",
        f"Records read {r.records_read}, rendered {r.records_rendered}, clean {r.records_clean}.",
        "",
        "## Tokens",
        "",
        "| split | records | prompt tokens | supervised tokens | total |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, s in [*r.splits.items(), ("**total**", r.total)]:
        lines.append(f"| {name} | {s.records} | {s.prompt_tokens:,} | {s.supervised_tokens:,} | {s.total_tokens:,} |")
    L = r.lengths
    lines += [
        "",
        f"Length per record: min {L['min']:.0f}, median {L['median']:.0f}, p95 {L['p95']:.0f}, "
        f"max {L['max']:.0f} tokens.",
        "",
        "![lengths](lengths.png)",
        "",
        "## Context caps",
        "",
        "| cap | records kept | dropped | supervised kept | share |",
        "|---:|---:|---:|---:|---:|",
    ]
    for c in r.caps:
        label = f"{c.cap} (native)" if c.native else str(c.cap)
        lines.append(
            f"| {label} | {c.records_kept} | {c.records_dropped} | {c.supervised_kept:,} | "
            f"{c.supervised_fraction:.2%} |"
        )
    lines += [
        "",
        f"**Recommended cap: {r.recommended_cap}** — {r.recommendation_reason}.",
        f"Cap applied to the tokenized set: {r.cap_applied} ({r.excluded_over_cap} record(s) over it excluded).",
        "",
        "## Chains",
        "",
        "The trainable actions (clean, within the applied cap) as per-action records and as chains (each "
        "trajectory's prefix-stable runs of actions as one sequence, every action supervised, cut after the "
        "last action that fits the cap). The tokenized set holds the chains.",
        "",
        "| split | actions | supervised tokens | tokens as records | chains | tokens as chains | chains / records |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, st in [*r.layouts.items(), ("**total**", r.layouts_total)]:
        ratio = "–" if st.chain_to_record_ratio is None else f"{st.chain_to_record_ratio:.4f}"
        lines.append(
            f"| {name} | {st.actions} | {st.supervised_tokens:,} | {st.record_tokens:,} | {st.chains} | "
            f"{st.chain_tokens:,} | {ratio} |"
        )
    lines += [
        "",
        f"Runs of actions: {r.runs.get('runs', 0)} ({r.runs.get('by_definition', 0)} checked by the "
        "per-action definition instead of the one-tokenization fast path).",
        "",
        "| chain break (all in `breaks.jsonl`) | count | first action of the new chain |",
        "|---|---:|---|",
    ]
    for kind, f in r.breaks.items():
        lines.append(f"| {kind} | {f.count} | {', '.join(f.ids[:3])} |")
    lines += ["", "## Mask checks", "", "| check | violations | example ids |", "|---|---:|---|"]
    for kind, f in r.violations.items():
        lines.append(f"| {kind} | {f.count} | {', '.join(f.ids[:3])} |")
    lines += ["", "## Records that could not be used", "", "| problem | count | example ids |", "|---|---:|---|"]
    for kind, f in r.problems.items():
        lines.append(f"| {kind} | {f.count} | {', '.join(f.ids[:3])} |")
    if r.explained:
        lines += ["", "What each finding means:", ""] + [f"- **{k}**: {v}." for k, v in r.explained.items()]
    lines += [
        "",
        "Full list: `violations.jsonl`. Tokenized set: `tokenized/` ("
        + ", ".join(f"{k}: {v}" for k, v in r.tokenized.items())
        + " chains).",
        "",
    ]
    return "\n".join(lines)


def write_outputs(
    out_dir: Path,
    report,
    chains: list,
    bad_rows: list[dict[str, Any]],
    tokenizer,
    info,
    *,
    model: str,
    resolved: Path | str,
    lengths: list[int],
    break_rows: list[dict[str, Any]] | None = None,
) -> None:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tok_dir = out_dir / "tokenized"
    if tok_dir.exists():
        shutil.rmtree(tok_dir)
    tok_dir.mkdir()
    by_split: dict[str, list] = {}
    for chain in chains:
        by_split.setdefault(chain.split, []).append(chain)
    for split in sorted(set(report.splits) | set(by_split)):
        _write_split(tok_dir / f"{split}.parquet", by_split.get(split, []))
        report.tokenized[split] = len(by_split.get(split, []))

    revision = model_revision(resolved)
    meta = {
        "harness": report.harness,  # the target harness the dataset was built for: training and serving check it
        "format": TOKENIZED_FORMAT,
        "layout": "chains",
        "model": model,
        "resolved": str(resolved) if isinstance(resolved, Path) else resolved,
        "revision": revision,
        "template_name": info.name,
        "template_sha256": info.sha256,
        "template": info.text,
        # the end-of-turn ids the masks supervised; serving stops on every one of them (same helper, same list)
        "stop_token_ids": stop_token_ids(tokenizer),
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "recommended_cap": report.recommended_cap,
        "cap_applied": report.cap_applied,
        "excluded_over_cap": report.excluded_over_cap,
        "think_in_labels": report.think_in_labels,
        "chains": dict(report.tokenized),
        "actions": {name: st.actions for name, st in report.layouts.items()},
        "mask": "1 = supervised: each action's tokens after its generation prompt, through its last end-of-turn "
        "token; input_ids[:action_lengths[i]] is action i's own per-action record",
    }
    (tok_dir / "meta.json").write_bytes(jsonio.dumps(meta))
    tdir = out_dir / "tokenizer"
    if tdir.exists():
        shutil.rmtree(tdir)
    tokenizer.save_pretrained(tdir)
    jsonio.write_jsonl(out_dir / "violations.jsonl", bad_rows)
    jsonio.write_jsonl(out_dir / "breaks.jsonl", break_rows or [])
    _histogram(out_dir / "lengths.png", lengths, [c.cap for c in report.caps], report.cap_applied)
    (out_dir / "audit.json").write_bytes(jsonio.dumps(report.model_dump(mode="json")))
    (out_dir / "audit.md").write_text(render_markdown(report), encoding="utf-8")
    _write_manifest(out_dir, Path(report.dataset), report.harness)


def _write_manifest(out_dir: Path, dataset_dir: Path, harness: str | None) -> None:
    """``manifest.json``: SHA-256 of every output file, and of the dataset manifest the audit read."""
    files = sorted(p for p in out_dir.rglob("*") if p.is_file() and p.name != "manifest.json")
    source = dataset_dir / "manifest.json"
    manifest = {
        "format": "harnessfit-audit/1",
        "harness": harness,
        "dataset_manifest_sha256": jsonio.sha256_file(source) if source.is_file() else None,
        "outputs": [
            {"path": p.relative_to(out_dir).as_posix(), "sha256": jsonio.sha256_file(p), "bytes": p.stat().st_size}
            for p in files
        ],
    }
    (out_dir / "manifest.json").write_bytes(jsonio.dumps(manifest))
