"""Action-level yield on the real traces: every assistant tool call is a training label or counted under a named
reason, and the two add up to the count an independent counter (``_helpers.raw_calls``, written from each format's
documentation) takes from the raw files; every label validates against the card; the report is byte-identical for 1
and 2 workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _helpers.raw_calls import count_calls
from harnessfit.convert import convert, validate_conversation
from harnessfit.core import Reason, Trajectory
from harnessfit.core.trajectory import CONTEXT_NOT_REBUILT
from harnessfit.formats.registry import iter_units, read_unit
from harnessfit.harness.card import load_card

CARD = load_card("pi", "0.73.1")
YIELD_NAMES = {r.value for r in Reason} | {"demonstration", "other_agent", CONTEXT_NOT_REBUILT}


@pytest.fixture(scope="module")
def converted(traces_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("yield")
    convert([traces_dir], out, CARD, install_dir="/opt/pi")
    return out


def test_every_call_is_a_label_or_lost_for_a_named_reason(converted: Path, traces_dir: Path) -> None:
    doc = json.loads((converted / "yield.json").read_text())
    assert doc["identity_holds"] is True
    files = {f["file"]: f for f in doc["files"]}
    raw_total = 0
    for p in sorted(traces_dir.iterdir()):
        if not p.is_dir():
            continue
        for unit in sorted(p.iterdir()):
            label = unit.relative_to(traces_dir.parent).as_posix()
            raw = count_calls(p.name, unit)
            raw_total += raw
            got = files.get(label, {"calls": 0, "labels": 0, "dropped": {}, "lost": {}})
            assert got["calls"] == raw, (label, got, raw)
            assert got["labels"] + sum(got["dropped"].values()) + sum(got["lost"].values()) == raw, label
            assert set(got["lost"]) <= YIELD_NAMES, got["lost"]
    total = doc["total"]
    assert total["calls"] == raw_total > 600
    assert total["labels"] + sum(total["dropped"].values()) + sum(total["lost"].values()) == raw_total
    by_format = doc["by_format"]
    assert sum(d["calls"] for d in by_format.values()) == raw_total
    # labels come from partial trajectories too: Claude Code and SWE-agent sessions are all rejected as a whole
    assert by_format["claude_code"]["labels"] >= 5 and by_format["swe_agent"]["labels"] >= 1
    assert doc["blockers"] and all(b["unlocks"] > 0 for b in doc["blockers"])
    assert doc["blockers"] == sorted(doc["blockers"], key=lambda b: -b["unlocks"])
    md = (converted / "yield.md").read_text()
    assert f"{raw_total} calls read" in md and "| claude_code |" in md


def test_pi_sessions_with_compactions_count_every_call_once(traces_dir: Path, tmp_path: Path) -> None:
    """The Pi sessions of ``../shared/traces-extra`` (when it is there) hold compactions: each epoch's kept turns
    repeat, as history only, calls an earlier epoch wrote, and each call is still counted once, as the raw counter
    counts the file; no label is a history-only turn."""
    extra = traces_dir.parent / "traces-extra" / "pi"
    if not extra.is_dir():
        pytest.skip("../shared/traces-extra/pi is not here")
    convert([extra], tmp_path, CARD, install_dir="/opt/pi")
    doc = json.loads((tmp_path / "yield.json").read_text())
    assert doc["identity_holds"] is True
    files = {f["file"]: f for f in doc["files"]}
    for unit in sorted(extra.glob("*.jsonl")):
        assert files[f"pi/{unit.name}"]["calls"] == count_calls("pi", unit), unit.name
    labels = 0
    for name in ("conversations.jsonl", "prefixes.jsonl"):
        for line in (tmp_path / name).read_bytes().splitlines():
            conv = json.loads(line)
            assert validate_conversation(conv, CARD) == [], conv["meta"]["file"]
            labels += sum(
                len(m.get("tool_calls") or [])
                for m in conv["messages"][conv["meta"]["labels_from"] :]
                if m["role"] == "assistant"
            )
    assert labels == doc["total"]["labels"] > 0


def test_every_label_validates_and_labels_match_the_wire(converted: Path, traces_dir: Path) -> None:
    wire_calls = 0
    prefixes = 0
    accepted: set[tuple[str, int | None]] = set()
    for name in ("conversations.jsonl", "prefixes.jsonl"):
        for line in (converted / name).read_bytes().splitlines():
            conv = json.loads(line)
            if name == "conversations.jsonl":
                accepted.add((conv["meta"]["file"], conv["meta"]["line_start"]))
            assert validate_conversation(conv, CARD) == [], conv["meta"]["file"]
            is_prefix = conv["meta"]["prefix"] is not None
            assert is_prefix == (name == "prefixes.jsonl")
            prefixes += is_prefix
            first = conv["meta"]["labels_from"]  # the messages before it are history only (a Pi compaction's)
            actions = [m for m in conv["messages"][first:] if m["role"] == "assistant"]
            if is_prefix:
                assert len(actions) == conv["meta"]["prefix"]["labels"] >= 1
            wire_calls += sum(len(m.get("tool_calls") or []) for m in actions)
    doc = json.loads((converted / "yield.json").read_text())
    # a label is a call on the wire, or a call the reader folded into the final answer (OpenHands' finish): those of
    # an accepted trajectory are labels (a rejected one's final answer comes after its cut)
    folded = sum(
        len(s.meta.get("folded_calls", []))
        for u in iter_units([traces_dir], ["openhands"])
        for t in read_unit(u, ["openhands"])
        if isinstance(t, Trajectory) and (t.provenance.file, t.provenance.line_start) in accepted
        for s in t.steps
    )
    assert folded and wire_calls + folded == doc["total"]["labels"]
    assert prefixes > 0
    ledger = [json.loads(line) for line in (converted / "ledger.jsonl").read_bytes().splitlines()]
    trajectory_rows = [r for r in ledger if r["calls"] is not None]
    assert sum(r["labels"] for r in trajectory_rows) <= doc["total"]["labels"]


def test_yield_is_the_same_for_one_and_two_workers(converted: Path, traces_dir: Path, tmp_path: Path) -> None:
    convert([traces_dir], tmp_path, CARD, workers=2, install_dir="/opt/pi")
    for name in ("yield.json", "yield.md", "prefixes.jsonl", "ledger.jsonl"):
        assert (tmp_path / name).read_bytes() == (converted / name).read_bytes(), name
