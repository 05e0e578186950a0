"""Stages are told by their own files, never by folder names (``report.locate``)."""

from __future__ import annotations

from pathlib import Path

import orjson

from harnessfit.report.locate import canonical_view, find_stages, is_canonical, stage_of


def _write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(doc))


def test_each_stage_is_found_by_what_it_wrote(tmp_path: Path) -> None:
    _write(tmp_path / "a" / "manifest.json", {"splits": {}, "harness_card": {"id": "pi-1.6.0"}})
    _write(tmp_path / "a-audit" / "audit.json", {"dataset": "a"})
    _write(tmp_path / "a-audit" / "tokenized" / "meta.json", {})
    _write(tmp_path / "runs" / "x" / "recipe.json", {"config_class": "HarnessfitSFTConfig"})
    _write(tmp_path / "runs" / "x" / "result.json", {"global_step": 3})
    _write(tmp_path / "runs" / "g" / "recipe.json", {"config_class": "HarnessfitGRPOConfig"})
    _write(tmp_path / "runs" / "g" / "grpo_stats.json", {})
    _write(tmp_path / "runs" / "e" / "results.json", {"episodes": []})
    _write(tmp_path / "runs" / "e" / "episodes" / "t" / "results.json", {"episodes": []})  # inside a stage: not one
    _write(tmp_path / "c" / "yield.json", {})
    _write(tmp_path / "c" / "accounting.json", {})
    _write(tmp_path / "s" / "manifest.json", {"stage": "synth"})
    _write(tmp_path / "dataset" / "other.json", {})  # a stage's folder name alone tells nothing
    assert stage_of(tmp_path / "dataset") is None
    found = find_stages([tmp_path])
    assert {k: [p.relative_to(tmp_path).as_posix() for p in v] for k, v in found.items()} == {
        "dataset": ["a"],
        "audit": ["a-audit"],
        "convert": ["c"],
        "train": ["runs/x"],
        "grpo": ["runs/g"],
        "eval": ["runs/e"],
        "synth": ["s"],
    }
    view, notes = canonical_view(found)
    assert (view / "dataset" / "manifest.json").is_file() and (view / "eval" / "e" / "results.json").is_file()
    assert notes == [] and is_canonical(view) and not is_canonical(tmp_path / "a")


def test_a_stage_found_twice_is_named(tmp_path: Path) -> None:
    for name in ("one", "two"):
        _write(tmp_path / name / "manifest.json", {"splits": {}, "harness_card": {}})
    _view, notes = canonical_view(find_stages([tmp_path / "one", tmp_path / "two"]))
    assert len(notes) == 1 and "2 dataset folders found" in notes[0] and str(tmp_path / "two") in notes[0]
