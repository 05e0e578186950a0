"""Audit of a dataset built by `harnessfit.dataset` from the real traces in ../shared/traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.tokens import audit, read_tokenized

# the small sources; the Pi author's large session alone is ~50 M prompt tokens of SFT records (bench material)
_SOURCES = ("openai_chat", "codex", "claude_code", "openhands", "swe_agent")


@pytest.mark.slow
def test_audit_of_dataset_built_from_real_traces(traces_dir: Path, tmp_path: Path) -> None:
    cfg = config_from_values(inputs=[str(traces_dir / s) for s in _SOURCES], parquet=False)
    build_dataset(cfg, tmp_path, out=tmp_path / "ds")
    report = audit(tmp_path / "ds", "embedded", tmp_path / "audit", progress=False)
    assert report.records_read > 50
    # every record renders, and no mask check fails on real data
    assert {k: f.count for k, f in report.violations.items() if f.count} == {}
    assert report.problems["render_error"].count == 0 and report.problems["invalid_record"].count == 0
    assert report.records_rendered == report.records_read - report.problems["empty_action"].count
    assert report.total.supervised_tokens > 0 and report.recommended_cap is not None
    kept = sum(report.tokenized.values())
    assert kept == report.records_clean - report.excluded_over_cap
    table = read_tokenized(tmp_path / "audit", "train")
    assert max(table.column("n_tokens").to_pylist()) <= report.cap_applied
