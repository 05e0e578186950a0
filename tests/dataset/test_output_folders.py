"""A stage replaces only an output folder it wrote itself, and never loses the previous one: ``build`` recognises
only harnessfit's own manifest (and refuses a folder holding files that manifest does not list), checks its inputs
before touching anything, writes into a hidden sibling and swaps it in by rename, so a build that fails or is
killed leaves the previous dataset as it was. ``convert --out`` follows the same rules, and neither writes inside
one of its inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_real_traces import _all_bytes, _pi_head

from harnessfit.convert import convert
from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.errors import UserError
from harnessfit.harness.card import load_card


@pytest.fixture(scope="module")
def card():
    return load_card("pi", "0.73.1")


def _dataset(tmp_path: Path, traces_dir: Path) -> tuple[Path, Path]:
    src = _pi_head(traces_dir, tmp_path / "in" / "s.jsonl")
    out = tmp_path / "ds"
    build_dataset(config_from_values(inputs=[str(src)], parquet=False), tmp_path, out=out)
    return src, out


def test_a_folder_with_someone_elses_manifest_is_not_a_dataset(tmp_path, traces_dir):
    src = _pi_head(traces_dir, tmp_path / "in" / "s.jsonl")
    web = tmp_path / "webapp"
    (web / "parquet").mkdir(parents=True)
    (web / "manifest.json").write_text('{"name": "my web app", "icons": []}')  # a PWA manifest
    (web / "README.md").write_text("my notes")
    (web / "parquet" / "data.parquet").write_bytes(b"PAR1")
    before = _all_bytes(web)
    with pytest.raises(UserError, match="not a harnessfit dataset"):
        build_dataset(config_from_values(inputs=[str(src)]), tmp_path, out=web)
    assert _all_bytes(web) == before


def test_a_dataset_folder_holding_unlisted_files_is_refused(tmp_path, traces_dir):
    src, out = _dataset(tmp_path, traces_dir)
    (out / "notes.txt").write_text("mine")
    before = _all_bytes(out)
    with pytest.raises(UserError, match=r"notes\.txt"):
        build_dataset(config_from_values(inputs=[str(src)], parquet=False), tmp_path, out=out)
    assert _all_bytes(out) == before


def test_a_mistyped_input_leaves_the_previous_dataset(tmp_path, traces_dir):
    src, out = _dataset(tmp_path, traces_dir)
    before = _all_bytes(out)
    with pytest.raises(UserError, match="input not found"):
        build_dataset(config_from_values(inputs=[str(src) + "x"]), tmp_path, out=out)
    assert _all_bytes(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "in"]  # nothing left beside it


def test_a_failing_build_leaves_the_previous_dataset(tmp_path, traces_dir, monkeypatch):
    import harnessfit.dataset.build as build

    src, out = _dataset(tmp_path, traces_dir)
    before = _all_bytes(out)

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(build, "write_exports", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        build_dataset(config_from_values(inputs=[str(src)], parquet=False), tmp_path, out=out)
    assert _all_bytes(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "in"]


_KILL_MID_EXPORT = """
import os, signal, sys
import harnessfit.dataset.sink as sink
written = [0]
real = sink._DiskFile._emit
def emit(self, data):
    real(self, data)
    self._fh.flush()
    written[0] += len(data)
    if written[0] > 20000:
        os.kill(os.getpid(), signal.SIGKILL)
sink._DiskFile._emit = emit
from harnessfit.cli import main
sys.argv = ["harnessfit", "build", "--inputs", sys.argv[1], "--out", sys.argv[2], "--no-parquet"]
main()
"""


def test_a_killed_build_leaves_the_previous_dataset_and_a_rerun_works(tmp_path, traces_dir):
    _src, out = _dataset(tmp_path, traces_dir)
    before = _all_bytes(out)
    # a second input makes the new build differ, so a half-written folder could not pass for the old one
    more = _pi_head(traces_dir, tmp_path / "in" / "t.jsonl", cut=40)
    proc = subprocess.run(
        [sys.executable, "-c", _KILL_MID_EXPORT, str(tmp_path / "in"), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert _all_bytes(out) == before
    build_dataset(config_from_values(inputs=[str(tmp_path / "in")], parquet=False), tmp_path, out=out)
    m = json.loads((out / "manifest.json").read_text())
    assert {Path(r["path"]).name for r in m["inputs"]} == {"s.jsonl", more.name}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "in"]  # the killed build's leftovers are gone


def test_an_output_inside_an_input_folder_is_refused(tmp_path, traces_dir, card):
    src = _pi_head(traces_dir, tmp_path / "in" / "s.jsonl")
    with pytest.raises(UserError, match="inside"):
        build_dataset(config_from_values(inputs=[str(tmp_path / "in")]), tmp_path, out=tmp_path / "in" / "ds")
    with pytest.raises(UserError, match="inside"):
        convert([tmp_path / "in"], tmp_path / "in" / "conv", card)
    with pytest.raises(UserError, match="inside"):  # an input inside the output folder would be swapped away
        build_dataset(config_from_values(inputs=[str(src)]), tmp_path, out=tmp_path)
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == ["s.jsonl"]


def test_convert_never_overwrites_a_dataset_or_a_foreign_folder(tmp_path, traces_dir, card):
    src, out = _dataset(tmp_path, traces_dir)
    before = _all_bytes(out)
    with pytest.raises(UserError, match="not a harnessfit convert output"):
        convert([src], out, card)
    assert _all_bytes(out) == before
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.md").write_text("mine")
    with pytest.raises(UserError, match="not a harnessfit convert output"):
        convert([src], notes, card)
    assert sorted(os.listdir(notes)) == ["todo.md"]


def test_convert_replaces_its_own_output_and_keeps_it_when_an_input_is_mistyped(tmp_path, traces_dir, card):
    src = _pi_head(traces_dir, tmp_path / "in" / "s.jsonl")
    conv = tmp_path / "conv"
    convert([src], conv, card)
    first = _all_bytes(conv)
    convert([src], conv, card)
    assert _all_bytes(conv) == first
    with pytest.raises(UserError, match="input not found"):
        convert([tmp_path / "in" / "nope.jsonl"], conv, card)
    assert _all_bytes(conv) == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conv", "in"]
