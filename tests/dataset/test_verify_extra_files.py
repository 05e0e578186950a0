"""``verify`` compares the folder, not only the files the rebuild writes: a file the build did not produce (a planted
``sft/zz.jsonl``, an extra Parquet shard a glob loader would read twice) is a mismatch."""

from __future__ import annotations

import shutil

import pytest
from test_real_traces import _pi_head

from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.dataset.verify import verify_dataset


@pytest.fixture()
def dataset(tmp_path, traces_dir):
    src = _pi_head(traces_dir, tmp_path / "in" / "s.jsonl")
    out = tmp_path / "ds"
    build_dataset(config_from_values(inputs=[str(src)]), tmp_path, out=out)
    assert verify_dataset(out).ok
    return out


def test_a_planted_jsonl_file_is_a_mismatch(dataset):
    shutil.copy(dataset / "sft" / "train.jsonl", dataset / "sft" / "zz.jsonl")
    res = verify_dataset(dataset)
    assert not res.ok and res.file == "sft/zz.jsonl" and "not produced by the build" in res.message()


def test_an_extra_parquet_shard_is_a_mismatch(dataset):
    shutil.copy(dataset / "parquet" / "sft" / "train.parquet", dataset / "parquet" / "sft" / "train-00001.parquet")
    res = verify_dataset(dataset)
    assert not res.ok and res.file == "parquet/sft/train-00001.parquet"


def test_a_planted_symlink_and_a_hidden_file_are_mismatches(dataset):
    (dataset / "conversations" / "extra.jsonl").symlink_to(dataset / "conversations" / "train.jsonl")
    res = verify_dataset(dataset)
    assert not res.ok and res.file == "conversations/extra.jsonl"
    (dataset / "conversations" / "extra.jsonl").unlink()
    (dataset / ".hidden").write_text("x")
    assert verify_dataset(dataset).file == ".hidden"
    (dataset / ".hidden").unlink()
    assert verify_dataset(dataset).ok
