"""The dataset card (README.md in the output folder): what is in the build, where it came from, what was dropped
and why, what redaction did and what it costs, and the licence note. Rendered only from the build's counts, so it
is byte-identical across reruns."""

from __future__ import annotations

from typing import Any

__all__ = ["render_card", "TRL_RECIPE"]


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
        _table(
            ["format", "files", "calls read", "kept as labels", "dropped", "lost by reason"],
            [
                [f, d["files"], d["calls"], d["labels"], _counts(d["dropped"]), _counts(d["lost"])]
                for f, d in y["by_format"].items()
            ],
        ),
        "",
        *_tier_section(y),
    ]


def _tier_section(y: dict[str, Any]) -> list[str]:
    """The labels per fidelity tier (a build at tier ``content``; none at ``byte``, where every label is byte)."""
    t = y["total"]
    if "labels_by_fidelity" not in t:
        return []
    return [
        "### Labels per fidelity tier",
        f"Built at fidelity tier `content`: {t['labels_by_fidelity']['byte']} labels have a context whose every byte "
        f"is known (`byte`), {t['labels_by_fidelity']['content']} a context holding a tool result rendered in Pi's words "
        "from output its agent altered in a documented way (`content`: Claude Code's Bash output with its edges "
        "trimmed and stderr apart, OpenHands' stripped output). Each SFT record and decision point says its "
        "`fidelity` and names the `alterations` of its context; a training config selects a tier with `fidelity`.",
        "",
        _table(
            ["format", "labels", "byte", "content"],
            [
                [f, d["labels"], d["labels_by_fidelity"]["byte"], d["labels_by_fidelity"]["content"]]
                for f, d in y["by_format"].items()
            ],
        ),
        "",
    ]


def render_card(m: dict[str, Any]) -> str:
    """``m`` is the manifest body (without output hashes)."""
    parts = [*_card_head(m), *_card_counts(m), "## Redaction", *_card_redaction(m["redaction"])]
    parts += [
        "",
        "## Licence",
        "Each conversation keeps the licence of the trace it came from (`meta.file`, `meta.source`); this build adds "
        "no rights. Check the source repositories' licences before redistributing.",
        "",
    ]
    return "\n".join(parts)


def _card_head(m: dict[str, Any]) -> list[str]:
    """The title, what the data is for, and the files."""
    return [
        "# harnessfit dataset",
        "",
        f"Training data in the exact wire format of **{m['harness_card']['id']}** (card sha256 "
        f"`{m['harness_card']['sha256']}`), built by harnessfit {m['packages']['harnessfit']}. "
        "Re-check it byte for byte with `harnessfit verify <this folder>`.",
        "",
        f"Target harness `{m['harness']}`: audit, train, `serve --pi-config` and eval take it from here and refuse "
        "another (`--harness`).",
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
        "- `parquet/{kind}/{split}.parquet` — the same records in the shape `datasets` and TRL take as they are: "
        "messages as chat-template dicts (text content as a string, tool-call `arguments` as the object the model "
        "wrote), `tools` as JSON-schema dicts; SFT rows as TRL's prompt-completion (`prompt`: the context, "
        "`completion`: the action), decision points with their state as `prompt`. Each object is stored as a JSON "
        "value (`datasets` feature `Json()`), never an Arrow struct, which would pad one tool's arguments with "
        "another's keys as nulls.",
        "- `ledger.jsonl` / `ledger_summary.json` — every input that did not become a training conversation, "
        "with its reason; `yield.json` / `yield.md` — every tool call read, kept as a label, dropped or lost, by "
        "reason, and the blockers that would unlock the most; `manifest.json` — SHA-256 of every input and output "
        "file, config, versions.",
        "",
        *TRL_RECIPE,
    ]


# the dataset card's recipe; ``tests/dataset/test_export_trl.py`` runs it as written (one step, embedded model)
TRL_RECIPE = [
    "## Training with TRL",
    "```python",
    "import torch",
    "from datasets import load_dataset",
    "from trl import SFTConfig, SFTTrainer",
    "",
    'train = load_dataset("parquet", data_files="parquet/sft/train.parquet", split="train")',
    "# prompt-completion rows: the loss covers the action only. max_length=None: TRL's default (1024) would cut",
    "# agent contexts; drop rows longer than your model's context instead. bf16 only where a GPU has it (TRL's",
    "# default asks for it and stops on a CPU).",
    'args = SFTConfig(output_dir="out", max_length=None, per_device_train_batch_size=1,',
    "                 bf16=torch.cuda.is_available())",
    "trainer = SFTTrainer(model=MODEL, args=args, train_dataset=train, processing_class=TOKENIZER)",
    "trainer.train()",
    "```",
    "`TOKENIZER` needs a chat template that renders `tools` and tool calls (`harnessfit.models.load_tokenizer` picks "
    "one); `harnessfit audit` + `harnessfit train sft` do the same with measured caps and per-action weighting.",
    "",
]


def _card_counts(m: dict[str, Any]) -> list[str]:
    """Counts per stage, splits, yield, sources and rejection reasons."""
    c = m["counts"]
    sp = m["splits"]
    return [
        "## Counts per stage",
        _table(
            ["stage", "count"],
            [
                ["read (conversations + rejections from conversion)", c["read"]],
                ["converted", c["converted"]],
                ["rejected at conversion", c["rejected_convert"]],
                ["conversations changed by redaction", c["redacted_conversations"]],
                ["exact duplicates dropped", c["duplicate_exact"]],
                ["near duplicates dropped", c["duplicate_near"]],
                ["kept", c["kept"]],
                *(
                    [
                        ["exact prefixes of rejected trajectories (SFT / decision points only)", c["prefixes"]["kept"]],
                        ["prefix duplicates dropped", c["prefixes"]["duplicate_exact"]],
                    ]
                    if c.get("prefixes")
                    else []
                ),
            ],
        ),
        "",
        "## Splits (grouped by root request)",
        f"Seed {sp['seed']}, ratios {', '.join(f'{k} {v:g}' for k, v in sp['ratios'].items())}. "
        f"Root requests in more than one split: **{sp['group_overlap']}** (asserted at build time).",
        "",
        _table(
            ["split", "root requests", "conversations", "SFT actions", "decision points"],
            [[s, v["groups"], v["conversations"], v["sft"], v["decision_points"]] for s, v in sp["per_split"].items()],
        ),
        "",
        *_yield_section(m.get("yield")),
        "## Sources",
        _table(["source", "kept conversations"], [[k, v] for k, v in sorted(c["kept_by_source"].items())])
        if c["kept_by_source"]
        else "(none kept)",
        "",
        "## Reasons rejected",
        _table(["reason", "count"], [[k, v] for k, v in sorted(c["rejected_by_reason"].items())])
        if c["rejected_by_reason"]
        else "(none)",
        "",
    ]


def _card_redaction(red: dict[str, Any]) -> list[str]:
    """What redaction did, what it kept verbatim, and its measured false-positive rate and recall."""
    parts: list[str] = []
    if red["enabled"]:
        outside = red.get("replaced_outside_conversations") or {}
        parts += [
            "Secrets, e-mail addresses and home-folder user names are replaced by placeholders that are consistent "
            "within one conversation (`REDACTED_<KIND>_<n>`, `email<n>@redacted.invalid`, `/home/user<n>`); user "
            "names also in file paths (`meta.file`, the ledger, the manifest), including session folders a tool "
            "named after the working folder (`--home-<name>-<project>--`).",
            "",
            "Every file here passed through the same redaction: the conversations, SFT records, decision points and "
            "their Parquet copies are written from the redacted conversations; the ledger (whose details quote "
            "rejected calls, cut only between words), its summary, the manifest and this card are redacted as they "
            "are written (placeholders numbered within one ledger row or one file). In the manifest's input paths, "
            "the ledger and its summary it replaced "
            + (", ".join(f"{v} × {k}" for k, v in outside.items()) if outside else "nothing")
            + ".",
            "",
            _table(
                ["kind", "distinct values", "occurrences replaced"],
                [
                    [k, red["found"].get(k, 0), red["replaced"].get(k, 0)]
                    for k in sorted(set(red["found"]) | set(red["replaced"]))
                ],
            )
            if red["found"] or red["replaced"]
            else "Nothing was found in the conversations.",
            "",
            "### Kept verbatim",
            "Redaction leaves these strings exactly as written, wherever they occur:",
            "",
        ]
        for k in red.get("kept") or []:
            holds = (
                f" **It holds what redaction would otherwise replace ({', '.join(k['holds'])}).**" if k["holds"] else ""
            )
            if k["where"] == "system_prompt":
                parts.append(
                    f"- `{k['text']}` — the harness install folder. Pi's system prompt names it, so every system "
                    "prompt keeps it byte for byte as Pi sends it on the machine that built this dataset."
                    + holds
                    + " Build with `--install-dir /opt/pi` (any fixed folder) for data that names no machine."
                )
            else:
                parts.append(
                    f"- `{k['text']}` — an input path relative to this folder (`manifest.json` → `config.inputs`): "
                    "`harnessfit verify` reads the inputs from there." + holds
                )
        parts += [
            "",
            f"Measured false-positive rate on {red['false_positive']['probes']} lines of ordinary code (git SHAs, "
            "UUIDs, lockfile hashes, checksums, base64 blocks and test vectors, data URIs, certificates, minified "
            "JavaScript, source maps, identifiers, URLs): "
            f"**{red['false_positive']['rate'] * 100:.2f}%** of lines would be changed.",
            "",
            _table(
                ["probe shape", "changed / probes"],
                [[k, f"{v[0]} / {v[1]}"] for k, v in red["false_positive"]["by_shape"].items()],
            ),
        ]
        rc = red.get("planted_recall")
        if rc:
            parts += [
                "",
                f"Measured recall on {rc['planted']} planted secrets of {len(rc['by_kind'])} kinds (known token "
                "shapes, keyword assignments in code, YAML and `.env` files, HTTP headers, URLs, keys with no prefix): "
                f"**{rc['caught']} / {rc['planted']}** removed ({rc['rate'] * 100:.1f}%). These are the kinds the "
                "rules were written against; recall on a held-apart set of other scanners' kinds is measured by "
                "`bench/redaction_recall.py`.",
                "",
                _table(
                    ["planted kind", "removed / planted"], [[k, f"{v[0]} / {v[1]}"] for k, v in rc["by_kind"].items()]
                ),
            ]
    else:
        parts += ["Redaction was **off** for this build."]
    return parts
