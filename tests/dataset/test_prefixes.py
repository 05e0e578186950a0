"""The build exports the actions of rejected trajectories' exact prefixes: SFT records and decision points (never
conversations), redacted, deduplicated, in the split of their root request; the card and yield.json report per-format
calls → labels; the UI-only drop policy is part of the build config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessfit.convert import validate_conversation
from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.dataset.verify import verify_dataset
from harnessfit.harness.card import load_card

CARD = load_card()  # the build target: the default card


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()] if path.is_file() else []


@pytest.fixture(scope="module")
def built(traces_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("prefix_build") / "ds"
    cfg = config_from_values(
        inputs=[str(traces_dir / "claude_code"), str(traces_dir / "swe_agent")], install_dir="/opt/pi", parquet=False
    )
    build_dataset(cfg, out.parent, out=out)
    return out


def test_prefix_actions_are_sft_records_and_decision_points_but_not_conversations(built: Path) -> None:
    m = json.loads((built / "manifest.json").read_text())
    pre = m["counts"]["prefixes"]
    assert pre["kept"] >= 2 and pre["sft"] >= 3 and pre["sft"] == pre["decision_points"]
    convs = {c["id"] for s in m["splits"]["per_split"] for c in _lines(built / "conversations" / f"{s}.jsonl")}
    seen_prefix_records = 0
    split_of_group: dict[str, str] = {}
    for split in m["splits"]["per_split"]:
        for rec in _lines(built / "sft" / f"{split}.jsonl"):
            assert split_of_group.setdefault(rec["group"], split) == split  # a task never crosses splits
            if rec["conversation_id"] in convs:
                continue
            seen_prefix_records += 1
            # the label with its context is an exact Pi prefix: it validates against the card
            prefix = {
                "messages": [*rec["messages"], rec["action"]],
                "tools": rec["tools"],
                "meta": {"prefix": {"labels": 1}},
            }
            assert validate_conversation(prefix, CARD) == [], rec["id"]
        for dp in _lines(built / "decision_points" / f"{split}.jsonl"):
            assert split_of_group[dp["group"]] == split
    assert seen_prefix_records == pre["sft"]
    per_split = m["splits"]["per_split"]
    assert sum(v["prefix_sft"] for v in per_split.values()) == pre["sft"]


def test_the_card_and_yield_report_calls_to_labels_per_format(built: Path) -> None:
    y = json.loads((built / "yield.json").read_text())
    assert y["identity_holds"] and y["total"]["labels"] > 0
    assert set(y["by_format"]) == {"claude_code", "swe_agent"}
    m = json.loads((built / "manifest.json").read_text())
    assert m["yield"]["by_format"] == y["by_format"]
    card = (built / "README.md").read_text()
    assert "## Tool calls → training labels" in card and "| claude_code |" in card
    assert verify_dataset(built).ok  # the new files are part of the manifest and re-build byte for byte


def test_ui_only_drop_policy_is_configured_in_the_build(tmp_path: Path) -> None:
    rows = [
        {
            "type": "user",
            "sessionId": "s",
            "uuid": "u1",
            "cwd": "/w",
            "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "tidy up"},
        },
        {
            "type": "assistant",
            "sessionId": "s",
            "uuid": "u2",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "TodoWrite", "input": {"todos": []}}],
            },
        },
        {
            "type": "user",
            "sessionId": "s",
            "uuid": "u3",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "Todos have been modified successfully."}
                ],
            },
        },
        {
            "type": "assistant",
            "sessionId": "s",
            "uuid": "u4",
            "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Nothing to tidy."}]},
        },
    ]
    src = tmp_path / "in" / "s.jsonl"
    src.parent.mkdir()
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    on = build_dataset(config_from_values(inputs=[str(src)], parquet=False), tmp_path, out=tmp_path / "on")
    assert on.manifest["counts"]["kept"] == 1
    assert on.manifest["yield"]["total"]["dropped"] == {"ui_only:TodoWrite": 1}
    off = build_dataset(
        config_from_values(inputs=[str(src)], parquet=False, convert={"drop_ui_tools": False}),
        tmp_path,
        out=tmp_path / "off",
    )
    assert off.manifest["counts"]["kept"] == 0
    assert off.manifest["yield"]["total"]["lost"] == {"ui_only_call": 1}
    assert off.manifest["config"]["convert"] == {"drop_ui_tools": False, "ui_tools": {}}


@pytest.mark.slow
def test_the_audit_renders_the_prefix_records(built: Path, tmp_path: Path) -> None:
    """Partial-trajectory SFT records are ordinary SFT records to the audit: rendered with the real tokenizer and
    chat template, with their loss masks checked."""
    from harnessfit.tokens.audit import audit

    m = json.loads((built / "manifest.json").read_text())
    report = audit(built, "embedded", tmp_path / "audit", progress=False)
    doc = json.loads((tmp_path / "audit" / "audit.json").read_text())
    assert doc["records_read"] == sum(v["sft"] for v in m["splits"]["per_split"].values())
    assert doc["records_rendered"] == doc["records_read"] and report is not None
