"""The dataset card (README.md in the output folder): what is in the build, where it came from, what was dropped
and why, what redaction did and what it costs, and the licence note. Rendered only from the build's counts, so it
is byte-identical across reruns."""

from __future__ import annotations

from typing import Any

__all__ = ["render_card"]


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in d.items()) or "-"


def _yield_section(y: dict[str, Any] | None) -> list[str]:
    """Per format: tool calls read, kept as labels, dropped, lost by reason (the conversion's ``yield.json``)."""
    if not y:
        return []
    t = y["total"]
    return [
        "## Tool calls → training labels",
        f"{t['calls']} assistant tool calls read; {t['labels']} are training labels (SFT records and decision points "
        "of conversations and of exact prefixes); every other call is dropped by policy or lost for a named reason "
        "(`yield.json`, with the blockers ranked by how many calls fixing them would unlock).",
        "",
        _table(["format", "files", "calls read", "kept as labels", "dropped", "lost by reason"],
               [[f, d["files"], d["calls"], d["labels"], _counts(d["dropped"]), _counts(d["lost"])]
                for f, d in y["by_format"].items()]),
        "",
    ]


def render_card(m: dict[str, Any]) -> str:
    """``m`` is the manifest body (without output hashes)."""
    c = m["counts"]
    sp = m["splits"]
    red = m["redaction"]
    parts = [
        "# harnessfit dataset",
        "",
        f"Training data in the exact wire format of **{m['harness_card']['id']}** (card sha256 "
        f"`{m['harness_card']['sha256']}`), built by harnessfit {m['packages']['harnessfit']}. "
        "Re-check it byte for byte with `harnessfit verify <this folder>`.",
        "",
        "## Files",
        "- `conversations/{split}.jsonl` — one full trajectory per line: `id`, `messages`, `tools`, `meta`, "
        "exactly as the harness sends them.",
        "- `sft/{split}.jsonl` — one record per assistant action: the context before it (system prompt first) "
        "and the action in wire form (tool-call `arguments` as compact JSON text). Besides the actions of the "
        "conversations, it holds every action of the exact prefix of a rejected trajectory (the actions before its "
        "first problem: each in a byte-exact context, none of them a mistake).",
        "- `decision_points/{split}.jsonl` — state + next assistant turn for RL, tool-call arguments parsed to "
        "objects, with the tool results the trace got back.",
        "- `parquet/{kind}/{split}.parquet` — the same records for `datasets.load_dataset(\"parquet\", data_files=…)`; "
        "messages, tools, actions and states are JSON text columns (decode with `json.loads`) because Arrow would "
        "add `null` keys to heterogeneous tool arguments.",
        "- `ledger.jsonl` / `ledger_summary.json` — every input that did not become a training conversation, "
        "with its reason; `yield.json` / `yield.md` — every tool call read, kept as a label, dropped or lost, by "
        "reason, and the blockers that would unlock the most; `manifest.json` — SHA-256 of every input and output "
        "file, config, versions.",
        "",
        "## Counts per stage",
        _table(["stage", "count"], [
            ["read (conversations + rejections from conversion)", c["read"]],
            ["converted", c["converted"]],
            ["rejected at conversion", c["rejected_convert"]],
            ["conversations changed by redaction", c["redacted_conversations"]],
            ["exact duplicates dropped", c["duplicate_exact"]],
            ["near duplicates dropped", c["duplicate_near"]],
            ["kept", c["kept"]],
            *([["exact prefixes of rejected trajectories (SFT / decision points only)", c["prefixes"]["kept"]],
               ["prefix duplicates dropped", c["prefixes"]["duplicate_exact"]]] if c.get("prefixes") else []),
        ]),
        "",
        "## Splits (grouped by root request)",
        f"Seed {sp['seed']}, ratios {', '.join(f'{k} {v:g}' for k, v in sp['ratios'].items())}. "
        f"Root requests in more than one split: **{sp['group_overlap']}** (asserted at build time).",
        "",
        _table(["split", "root requests", "conversations", "SFT actions", "decision points"],
               [[s, v["groups"], v["conversations"], v["sft"], v["decision_points"]] for s, v in sp["per_split"].items()]),
        "",
        *_yield_section(m.get("yield")),
        "## Sources",
        _table(["source", "kept conversations"], [[k, v] for k, v in sorted(c["kept_by_source"].items())]) if c["kept_by_source"] else "(none kept)",
        "",
        "## Reasons rejected",
        _table(["reason", "count"], [[k, v] for k, v in sorted(c["rejected_by_reason"].items())]) if c["rejected_by_reason"] else "(none)",
        "",
        "## Redaction",
    ]
    if red["enabled"]:
        parts += [
            "Secrets, e-mail addresses and home-folder user names are replaced by placeholders that are consistent "
            "within one conversation (`REDACTED_<KIND>_<n>`, `email<n>@redacted.invalid`, `/home/user<n>`).",
            "",
            _table(["kind", "distinct values", "occurrences replaced"],
                   [[k, red["found"].get(k, 0), red["replaced"].get(k, 0)] for k in sorted(set(red["found"]) | set(red["replaced"]))])
            if red["found"] or red["replaced"] else "Nothing was found.",
            "",
            f"Measured false-positive rate on {red['false_positive']['probes']} lines of ordinary code (git SHAs, "
            "UUIDs, lockfile hashes, checksums, base64, identifiers, URLs): "
            f"**{red['false_positive']['rate'] * 100:.2f}%** of lines would be changed.",
            "",
            _table(["probe shape", "changed / probes"],
                   [[k, f"{v[0]} / {v[1]}"] for k, v in red["false_positive"]["by_shape"].items()]),
        ]
    else:
        parts += ["Redaction was **off** for this build."]
    parts += [
        "",
        "## Licence",
        "Each conversation keeps the licence of the trace it came from (`meta.file`, `meta.source`); this build adds "
        "no rights. Check the source repositories' licences before redistributing.",
        "",
    ]
    return "\n".join(parts)
