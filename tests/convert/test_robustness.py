"""Bad input is data: binary, non-UTF-8, empty, truncated, corrupt lines and a 50 MB single line each become ledger
rows with a reason (and line numbers where they apply), never a crash; the identity holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harnessfit.convert import convert
from harnessfit.core import Reason
from harnessfit.harness.card import load_card


@pytest.fixture(scope="module")
def card():
    return load_card("pi", "0.73.1")


def _ledger(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "ledger.jsonl").read_bytes().splitlines()]


def _session_bytes(traces_dir: Path) -> bytes:
    return (traces_dir / "pi" / "kvsankar__agent-history__session-01.jsonl").read_bytes()


def test_file_level_problems(tmp_path: Path, card, traces_dir: Path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "empty.jsonl").write_bytes(b"")
    (src / "binary.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    good = _session_bytes(traces_dir)
    # a Pi session whose second line has invalid UTF-8 and whose last line is cut in half
    lines = good.splitlines(keepends=True)
    bad_utf8 = lines[0] + b'{"type":"label","id":"zz","parentId":null,"label":"\xff\xfe"}\n' + b"".join(lines[1:])
    (src / "utf8.jsonl").write_bytes(bad_utf8)
    (src / "truncated.jsonl").write_bytes(good[: len(good) - 40])
    out = tmp_path / "out"
    summary = convert([src], out, card)
    rows = _ledger(out)
    by_file: dict[str, set[str]] = {}
    for r in rows:
        by_file.setdefault(r["file"].split("/")[-1], set()).add(r["reason"])
    assert by_file["empty.jsonl"] == {Reason.empty.value}
    assert by_file["binary.bin"] == {Reason.binary_file.value}
    assert Reason.not_utf8.value in by_file["utf8.jsonl"] and Reason.parse_error.value in by_file["utf8.jsonl"]
    assert Reason.truncated_file.value in by_file["truncated.jsonl"]
    line_rows = [r for r in rows if r["reason"] in ("not_utf8", "truncated_file") and r["line_start"] is not None]
    assert {r["line_start"] for r in line_rows if r["reason"] == "not_utf8"} == {2}
    assert summary.read == summary.accepted + summary.rejected
    assert summary.accepted == 0


def test_corrupt_line_in_claude_session_rejects_line_and_session(tmp_path: Path, card, traces_dir: Path):
    src = traces_dir / "claude_code" / "iampkuhz__feipi-session-browser__8a283a61-e3f0-4e8f-ba06-6711e2fcf2ed.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    lines[4] = b'{"type": "assistant", "message": {"content": [\n'
    f = tmp_path / "in" / "c.jsonl"
    f.parent.mkdir()
    f.write_bytes(b"".join(lines))
    out = tmp_path / "out"
    summary = convert([f.parent], out, card)
    reasons = sorted((r["reason"], r["line_start"]) for r in _ledger(out))
    assert ("parse_error", 5) in reasons
    assert summary.accepted == 0 and summary.read == summary.rejected == 2


def test_fifty_megabyte_single_line(tmp_path: Path, card, traces_dir: Path):
    src = tmp_path / "in"
    src.mkdir()
    good = _session_bytes(traces_dir)
    first, rest = good.split(b"\n", 1)
    blob = b'{"type":"custom","id":"big","parentId":null,"data":"' + b"x" * (50 * 1024 * 1024) + b'"}\n'
    (src / "big.jsonl").write_bytes(first + b"\n" + blob + rest)
    shutil.copyfile(traces_dir / "pi" / "kvsankar__agent-history__session-01.jsonl", src / "ok.jsonl")
    out = tmp_path / "out"
    summary = convert([src], out, card)
    rows = _ledger(out)
    big = [r for r in rows if r["file"].endswith("big.jsonl")]
    assert {(r["reason"], r["line_start"]) for r in big} >= {("line_too_long", 2)}
    assert summary.accepted == 1  # the good file next to it still converts
    assert summary.read == summary.accepted + summary.rejected
