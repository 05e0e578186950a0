"""The manifest's input list is exactly what the convert stage reads: hidden files included, folder units whole."""

import json
import shutil
from pathlib import Path

import pytest

from harnessfit.dataset.build import build_dataset, input_files
from harnessfit.dataset.config import InputSpec, config_from_values
from harnessfit.errors import UserError
from harnessfit.formats.registry import iter_units

PI_SMALL = "pi/kvsankar__agent-history__session-01.jsonl"
OH_V1 = "openhands/OpenHands__software-agent-sdk__v1_conversation_cd94562403b9487ebdd4018e3f531dfd"


def _tree(tmp_path: Path, traces_dir: Path) -> Path:
    root = tmp_path / "in"
    (root / ".hidden").mkdir(parents=True)
    shutil.copy(traces_dir / PI_SMALL, root / "a.jsonl")
    shutil.copy(traces_dir / PI_SMALL, root / ".b.jsonl")
    shutil.copy(traces_dir / PI_SMALL, root / ".hidden" / "c.jsonl")
    shutil.copytree(traces_dir / OH_V1, root / "oh")
    return root


def test_input_files_equal_the_units_convert_reads(tmp_path, traces_dir):
    root = _tree(tmp_path, traces_dir)
    files = input_files([InputSpec(path=str(root))])
    from_units = set()
    for u in iter_units([root]):
        from_units |= {p for p in u.path.rglob("*") if p.is_file()} if u.path.is_dir() else {u.path}
    assert set(files) == from_units and files == sorted(files)
    names = {p.relative_to(root).as_posix() for p in files}
    assert {"a.jsonl", ".b.jsonl", ".hidden/c.jsonl"} <= names
    assert any(n.startswith("oh/events/") for n in names) and "oh/base_state.json" in names
    with pytest.raises(UserError):
        input_files([InputSpec(path=str(root / "missing"))])


def test_build_reads_and_lists_hidden_files(tmp_path, traces_dir):
    root = _tree(tmp_path, traces_dir)
    out = tmp_path / "out"
    build_dataset(config_from_values(inputs=[str(root)], parquet=False), tmp_path, out=out)
    m = json.loads((out / "manifest.json").read_text())
    listed = {Path(r["path"]).name for r in m["inputs"]}
    assert {"a.jsonl", ".b.jsonl", "c.jsonl"} <= listed
    # the three copies of one session and the OpenHands folder are all read (two copies are exact duplicates)
    assert m["counts"]["read"] == 4 and m["counts"]["duplicate_exact"] == 2
