"""Redaction's cost and benefit, measured on seeded probes (``dataset.probe``): under 1 % of ordinary code lines
changed on a probe of 26 shapes (lockfile hashes, UUIDs, base64 test vectors and payloads, data URIs,
certificates, minified JavaScript, source maps, …), with every planted secret still removed; the build prints both
numbers and the card states them."""

from __future__ import annotations

import json

import pytest

from harnessfit.dataset.probe import measure_false_positive_rate, measure_planted_recall, probe_lines
from harnessfit.dataset.redact import Redactor


def test_the_probe_is_large_and_holds_real_code_shapes():
    lines = probe_lines()
    shapes = {s for s, _ in lines}
    assert len(lines) >= 1200 and len(shapes) >= 25
    assert {
        "npm_integrity",
        "pnpm_lock",
        "go_sum",
        "uuid",
        "guid",
        "base64_test_vector",
        "base64_inline",
        "minified_js",
        "data_uri",
        "certificate",
        "source_map",
    } <= shapes


@pytest.mark.parametrize("seed", [7, 1, 2])
def test_false_positives_under_one_percent_and_no_planted_secret_lost(seed):
    redactor = Redactor()
    fp = measure_false_positive_rate(redactor, seed=seed)
    rc = measure_planted_recall(redactor, seed=seed + 4)
    assert fp.rate < 0.01, {k: v for k, v in fp.by_shape.items() if v[0]}
    assert len(rc.by_kind) >= 20 and rc.planted >= 60
    assert rc.caught == rc.planted, {k: v for k, v in rc.by_kind.items() if v[0] != v[1]}


def test_inline_base64_is_data_but_a_named_base64_secret_is_not():
    r = Redactor()
    payload = 'payload = b64decode("XCWwi+oGwodM+qTdF7LYQoRd6CpbxTmIiseAVKI5nM/J")'
    assert r.findings(payload) == []
    named = "client_secret: XCWwi+oGwodM+qTdF7LYQoRd6CpbxTmIiseAVKI5nM/J"
    assert r.findings(named)


def test_the_build_prints_both_numbers_and_the_card_states_them(tmp_path, traces_dir):
    from test_real_traces import _pi_head
    from typer.testing import CliRunner

    from harnessfit.cli import app

    src = _pi_head(traces_dir, tmp_path / "in" / "s.jsonl")
    res = CliRunner().invoke(app, ["build", "--inputs", str(src), "--out", str(tmp_path / "ds"), "--no-parquet"])
    assert res.exit_code == 0, res.output
    m = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    fp, rc = m["redaction"]["false_positive"], m["redaction"]["planted_recall"]
    assert fp["rate"] < 0.01 and rc["caught"] == rc["planted"]
    out = " ".join(res.output.split())  # the console wraps long lines
    assert f"{fp['rate'] * 100:.2f}% of {fp['probes']} probe lines" in out
    assert f"planted secrets of the kinds the rules were written for removed {rc['caught']}/{rc['planted']}" in out
    card = (tmp_path / "ds" / "README.md").read_text()
    assert "held-apart set: bench/redaction_recall.py" in out and "held-apart set of other scanners" in " ".join(
        card.split()
    )
    assert f"**{rc['caught']} / {rc['planted']}** removed" in card and f"{fp['rate'] * 100:.2f}%" in card
