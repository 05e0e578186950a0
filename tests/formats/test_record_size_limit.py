"""One size limit for everything a reader holds whole: a JSONL line and a whole-file JSON document (``.json``,
``.traj``) over it get the same ledger reason, naming the size and the limit, and are never loaded. The limit is set
small here through ``HARNESSFIT_MAX_RECORD_BYTES`` (read when a file is read, so worker processes see it too)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harnessfit.convert import convert
from harnessfit.formats import reading
from harnessfit.harness.card import load_card

SWE = "swe_agent/SWE-agent__SWE-agent__marshmallow-code__marshmallow-1867__function_calling_replace.traj"
PI = "pi/kvsankar__agent-history__session-01.jsonl"


def test_the_default_limit_is_one_for_lines_and_documents(monkeypatch):
    monkeypatch.delenv("HARNESSFIT_MAX_RECORD_BYTES", raising=False)
    assert reading.max_record_bytes() == reading.MAX_RECORD_BYTES == 16 * 1024 * 1024


def test_an_over_limit_document_and_line_get_one_reason(tmp_path: Path, traces_dir: Path, monkeypatch):
    card = load_card("pi", "0.73.1")
    src = tmp_path / "in"
    src.mkdir()
    shutil.copyfile(traces_dir / SWE, src / "run.traj")  # ~100 KB whole-file document
    lines = (traces_dir / PI).read_bytes().splitlines(keepends=True)
    big = max(range(len(lines)), key=lambda i: len(lines[i]))
    limit = len(lines[big]) - 2  # one byte short of the longest line (its newline not counted)
    assert (src / "run.traj").stat().st_size > limit  # the document is over the same limit
    (src / "s.jsonl").write_bytes(b"".join(lines))
    monkeypatch.setenv("HARNESSFIT_MAX_RECORD_BYTES", str(limit))
    out = tmp_path / "out"
    summary = convert([src], out, card, workers=2)
    rows = [json.loads(x) for x in (out / "ledger.jsonl").read_text().splitlines()]
    doc = [r for r in rows if r["file"] == "in/run.traj"]
    line = [r for r in rows if r["file"] == "in/s.jsonl" and r["line_start"] == big + 1]
    assert len(doc) == 1 and doc[0]["reason"] == "record_too_large", doc
    assert f"limit {limit}" in doc[0]["detail"] and "document" in doc[0]["detail"], doc
    assert line and line[0]["reason"] == "record_too_large" and f"limit {limit}" in line[0]["detail"], line
    assert summary.read == summary.accepted + summary.rejected


def test_a_bad_limit_is_a_clear_error(monkeypatch):
    from harnessfit.errors import UserError

    monkeypatch.setenv("HARNESSFIT_MAX_RECORD_BYTES", "lots")
    with pytest.raises(UserError, match="HARNESSFIT_MAX_RECORD_BYTES"):
        reading.max_record_bytes()
