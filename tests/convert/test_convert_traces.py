"""The whole shared traces folder: every file read, identity per file and total, every accepted conversation valid,
every rejection with a reason a test asserts, 1 vs 2 workers byte-identical, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.convert import convert, iter_convert, validate_conversation
from harnessfit.convert.policy import ConvertPolicy
from harnessfit.core import Conversation, Reason
from harnessfit.harness.card import load_card
from harnessfit.harness.versions import NEWEST_PI_VERSION

# Reasons a real trace in ../shared/traces may be rejected for (anything else is a regression to look at).
EXPECTED_REAL_REASONS = {
    Reason.unknown_format,  # SOURCES.md
    Reason.unsupported_tool,  # AskUserQuestion, Glob, non-Pi tools in other formats
    Reason.unmappable_arguments,
    Reason.unmappable_result,  # OpenHands strips a command's output, so its terminal results are never Pi's text
    Reason.arguments_double_encoded,
    Reason.schema_violation,
    Reason.missing_tool_result,
    Reason.orphan_tool_result,
    Reason.aborted_or_error_turn,
    Reason.image_content,
    Reason.no_final_response,
    Reason.empty,
    Reason.subagent,
}


@pytest.fixture(scope="module")
def card():
    return load_card("pi", "0.73.1")


@pytest.fixture(scope="module")
def converted(traces_dir: Path, card, tmp_path_factory):
    out = tmp_path_factory.mktemp("convert1")
    summary = convert([traces_dir], out, card, workers=1)
    return summary, out


def test_every_file_read_and_identity_holds(converted, traces_dir: Path):
    summary, out = converted
    acc = json.loads((out / "accounting.json").read_text())
    files_on_disk = set()
    for p in traces_dir.rglob("*"):
        if p.is_file():
            rel = p.relative_to(traces_dir.parent).as_posix()
            # a folder unit (OpenHands V1) covers the files under it
            files_on_disk.add(rel)
    labels = [f["file"] for f in acc["files"]]
    covered = {f for f in files_on_disk if any(f == lab or f.startswith(lab + "/") for lab in labels)}
    assert covered == files_on_disk
    assert acc["identity_holds"] is True
    for f in acc["files"]:
        assert f["read"] == f["accepted"] + f["rejected"] >= 1, f
    assert acc["total"]["read"] == acc["total"]["accepted"] + acc["total"]["rejected"] == summary.read
    conv_lines = (out / "conversations.jsonl").read_bytes().count(b"\n")
    ledger_lines = (out / "ledger.jsonl").read_bytes().count(b"\n")
    assert conv_lines == summary.accepted and ledger_lines == summary.rejected
    assert summary.accepted > 0 and summary.rejected > 0
    assert "| reason | count |" in (out / "ledger_summary.md").read_text()


def test_every_accepted_conversation_validates_against_the_card(converted, card):
    _, out = converted
    n = 0
    for line in (out / "conversations.jsonl").read_bytes().splitlines():
        conv = Conversation.model_validate_json(line)
        assert validate_conversation(conv, card) == [], conv.meta.file
        assert conv.meta.card == card.id
        n += 1
    assert n > 0


def test_every_rejection_has_an_expected_reason(converted):
    _, out = converted
    seen = set()
    for line in (out / "ledger.jsonl").read_bytes().splitlines():
        row = json.loads(line)
        reason = Reason(row["reason"])
        assert reason in EXPECTED_REAL_REASONS, row
        assert row["detail"] and row["repair_hint"] and row["record_id"] and row["file"]
        seen.add((row["file"].split("/")[1], reason))
    assert ("SOURCES.md", Reason.unknown_format) in seen
    assert ("claude_code", Reason.unsupported_tool) in seen


# every real file's outcome: (accepted, {reason: rejected count}). A change here is a behaviour change to look at.
PINNED_LEDGER = {
    "traces/SOURCES.md": (0, {"unknown_format": 1}),
    # Claude Code trims Bash output: never byte-exactly Pi's text; accepted at fidelity tier content (BYTE_ONLY)
    "traces/claude_code/iampkuhz__feipi-session-browser__8a283a61-e3f0-4e8f-ba06-6711e2fcf2ed.jsonl": (1, {}),
    "traces/claude_code/jnarowski__agentcmd__full-session-two.jsonl": (0, {"unsupported_tool": 1}),
    "traces/claude_code/marot__spotter__short.jsonl": (0, {"unsupported_tool": 1}),
    "traces/codex/iampkuhz__feipi-session-browser__rollout-2026-06-19T10-14-27-019edda8-7eca-7710-b78b-6ce7607beaa1"
    ".jsonl": (0, {"unsupported_tool": 1}),
    "traces/codex/jnarowski__agentcmd__rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl": (1, {}),
    "traces/openai_chat/OpenHands__software-agent-sdk__fncall-llm-message.json": (0, {"unsupported_tool": 1}),
    "traces/openai_chat/hiyouga__LLaMA-Factory__glaive_toolcall_en_demo.json": (109, {"unsupported_tool": 191}),
    "traces/openhands/All-Hands-AI__OpenHands__basic.json": (1, {}),
    "traces/openhands/OpenHands__software-agent-sdk__v1_conversation_cd94562403b9487ebdd4018e3f531dfd": (1, {}),
    "traces/pi/badlogic__pi-mono__large-session.jsonl": (1, {}),
    "traces/pi/kvsankar__agent-history__session-01.jsonl": (1, {}),
    "traces/swe_agent/SWE-agent__SWE-agent__marshmallow-code__marshmallow-1867__function_calling_replace.traj": (
        0,
        {"unsupported_tool": 1},
    ),
}


BYTE_ONLY = {  # the files whose outcome differs at fidelity tier byte: OpenHands strips, Claude Code trims output
    "traces/claude_code/iampkuhz__feipi-session-browser__8a283a61-e3f0-4e8f-ba06-6711e2fcf2ed.jsonl": (
        0,
        {"unmappable_result": 1},
    ),
    "traces/openhands/OpenHands__software-agent-sdk__v1_conversation_cd94562403b9487ebdd4018e3f531dfd": (
        0,
        {"unmappable_result": 1},
    ),
}


def test_pinned_ledger_at_tier_byte(traces_dir: Path, card, tmp_path: Path):
    convert([traces_dir], tmp_path, card, workers=1, policy=ConvertPolicy(fidelity="byte"))
    acc = {f["file"]: f for f in json.loads((tmp_path / "accounting.json").read_text())["files"]}
    assert {name: (f["accepted"], f["reasons"]) for name, f in acc.items()} == {**PINNED_LEDGER, **BYTE_ONLY}
    assert (
        b'"altered"' not in (tmp_path / "conversations.jsonl").read_bytes() + (tmp_path / "prefixes.jsonl").read_bytes()
    )
    assert "labels_by_fidelity" not in (tmp_path / "yield.json").read_text()


def test_pinned_ledger_per_file_and_reason(converted):
    _, out = converted
    acc = {f["file"]: f for f in json.loads((out / "accounting.json").read_text())["files"]}
    got = {name: (f["accepted"], f["reasons"]) for name, f in acc.items()}
    assert got == PINNED_LEDGER
    for name, f in acc.items():
        assert f["rejected"] == sum(PINNED_LEDGER[name][1].values()), name
    # the ledger rows themselves carry the same file/reason counts
    rows: dict[tuple[str, str], int] = {}
    for line in (out / "ledger.jsonl").read_bytes().splitlines():
        row = json.loads(line)
        rows[(row["file"], row["reason"])] = rows.get((row["file"], row["reason"]), 0) + 1
    assert rows == {(name, r): n for name, (_, reasons) in PINNED_LEDGER.items() for r, n in reasons.items()}


def test_one_and_two_workers_give_identical_bytes(traces_dir: Path, card, converted, tmp_path: Path):
    _, out1 = converted
    out2 = tmp_path / "w2"
    convert([traces_dir], out2, card, workers=2)
    for name in ("conversations.jsonl", "ledger.jsonl", "ledger_summary.md", "accounting.json"):
        assert (out1 / name).read_bytes() == (out2 / name).read_bytes(), name


def test_iter_convert_matches_written_files(traces_dir: Path, card, converted):
    _, out = converted
    items = list(iter_convert([traces_dir / "pi", traces_dir / "claude_code"], card))
    assert [type(i).__name__ for i in items].count("Conversation") == 3
    convs = [json.loads(line) for line in (out / "conversations.jsonl").read_bytes().splitlines()]
    by_id = {c["id"]: c for c in convs}
    for item in items:
        if isinstance(item, Conversation):
            got = item.model_dump(mode="json")
            want = by_id[item.id]
            # labels are relative to the input argument's parent: traces/pi/… vs pi/…
            assert want["meta"].pop("file") == "traces/" + got["meta"].pop("file")
            assert want == got


def test_cli_convert(traces_dir: Path, tmp_path: Path):
    result = CliRunner().invoke(
        app,
        [
            "convert",
            str(traces_dir / "pi"),
            str(traces_dir / "claude_code"),
            "--out",
            str(tmp_path / "o"),
            "--harness",
            "pi@0.73.1",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "read 5 = accepted 3 + rejected 2" in result.output  # at tier content (the default)
    result = CliRunner().invoke(
        app,
        [
            "convert",
            str(traces_dir / "pi"),
            str(traces_dir / "claude_code"),
            "--out",
            str(tmp_path / "b"),
            "--harness",
            "pi@0.73.1",
            "--fidelity",
            "byte",
        ],
    )
    assert result.exit_code == 0 and "read 5 = accepted 2 + rejected 3" in result.output, result.output
    assert orjson.loads((tmp_path / "o" / "accounting.json").read_bytes())["harness"] == "pi@0.73.1"
    # the default target is the newest card: the old Pi session's write results are put in its words
    newest = CliRunner().invoke(app, ["convert", str(traces_dir / "pi"), "--out", str(tmp_path / "n")])
    assert newest.exit_code == 0 and "harness_version_mismatch" not in newest.output, newest.output
    texts = (tmp_path / "n" / "conversations.jsonl").read_text()
    assert "pi.text_rerendered:write" in texts and "Successfully wrote to " in texts and " bytes to " not in texts
    assert orjson.loads((tmp_path / "n" / "accounting.json").read_bytes())["harness"] == f"pi@{NEWEST_PI_VERSION}"
    result = CliRunner().invoke(
        app, ["convert", str(traces_dir / "pi"), "--out", str(tmp_path / "p"), "--format", "claude_code"]
    )
    assert result.exit_code == 0, result.output
    assert "unknown_format" in result.output
