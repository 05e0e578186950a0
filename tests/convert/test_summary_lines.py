"""What the convert and build summaries tell the user about Pi sessions: which Pis could have recorded them, the
labels each candidate target would give (one line each, checked against converting with that target), calls →
labels, and never a bare "kept 0" when exact prefixes feed SFT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.harness.versions import NEWEST_PI_VERSION

FAMILY = ("0.73.1", "0.79.10", "0.82.0")  # the 0.x session layout: the file cannot tell these apart


def _pi_labels(out: Path) -> tuple[int, int]:
    d = json.loads((out / "yield.json").read_text())["by_format"]["pi"]
    return d["calls"], d["labels"]


def test_convert_names_the_recording_pis_and_the_labels_each_target_gives(traces_dir: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["convert", str(traces_dir / "pi"), "--out", str(tmp_path / "new")])
    assert r.exit_code == 0, r.output
    calls, labels = _pi_labels(tmp_path / "new")
    lines = r.output.splitlines()
    # the session's layout fits the 0.x cards; its own words date it older (harness.pi.texts.text_releases)
    dated = f"Pi sessions recorded by pi@{'|'.join(FAMILY)} (1 file, {calls} calls; their Pi-authored texts are in the "
    assert any(line.startswith(dated) and line.endswith("; labels per target:") for line in lines), r.output
    assert f"  pi@{NEWEST_PI_VERSION} (this run): {labels}" in lines
    # at tier content (the default) the line splits the labels per fidelity tier (a Pi session has no altered result)
    assert f"tool calls → labels: {calls} → {labels} (fidelity byte {labels}, content 0)" in lines
    old = CliRunner().invoke(
        app, ["convert", str(traces_dir / "pi"), "--out", str(tmp_path / "old"), "--harness", f"pi@{FAMILY[0]}"]
    )
    assert old.exit_code == 0, old.output
    _, at_recorder = _pi_labels(tmp_path / "old")
    # the old session's texts are re-rendered in the newest Pi's words (harness.pi_texts): nothing is lost to them
    assert at_recorder == labels
    for v in FAMILY:  # the counts the summary names are what converting with that target gives
        assert f"  pi@{v}: {at_recorder}" in lines, r.output
    assert f"  pi@{FAMILY[0]} (this run): {at_recorder}" in old.output.splitlines(), old.output


@pytest.mark.slow
def test_build_summary_never_says_kept_0_alone(traces_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "ds"
    # a Pi older than the newest, cut after a tool result half-way: no final answer, so only exact prefixes are kept
    lines = (traces_dir / "pi" / "badlogic__pi-mono__large-session.jsonl").read_bytes().split(b"\n")
    end = max(k for k, line in enumerate(lines[: len(lines) // 2]) if b'"role":"toolResult"' in line)
    session = tmp_path / "in" / "session.jsonl"
    session.parent.mkdir()
    session.write_bytes(b"\n".join(lines[: end + 1]) + b"\n")
    r = CliRunner().invoke(app, ["build", "--inputs", str(session), "--out", str(out), "--no-parquet"])
    assert r.exit_code == 0, r.output
    m = json.loads((out / "manifest.json").read_text())
    c, prefixes = m["counts"], m["counts"]["prefixes"]
    assert c["kept"] == 0 and prefixes["kept"] > 0, c  # the newest Pi keeps only exact prefixes of this session
    row = next(line for line in r.output.splitlines() if "kept conversations" in line)
    assert f" 0 + {prefixes['kept']} " in row, r.output
    assert f"Pi sessions recorded by pi@{'|'.join(FAMILY)} (1 file, " in r.output
    total = m["yield"]["total"]
    assert f"tool calls → labels: {total['calls']} → {total['labels']}" in r.output
