"""Audit of a dataset built by `harnessfit.dataset` from the real traces in ../shared/traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.core import jsonio
from harnessfit.core.records import SFTRecord
from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.models import load_tokenizer
from harnessfit.tokens import audit, read_tokenized
from harnessfit.tokens.chains import chain_records

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
    assert report.layouts_total.actions == report.records_clean - report.excluded_over_cap
    assert sum(report.tokenized.values()) == report.layouts_total.chains
    table = read_tokenized(tmp_path / "audit", "train")
    assert max(table.column("n_tokens").to_pylist()) <= report.cap_applied
    # the chains the audit wrote are the definition's: every action rendered as its own record and compared
    records = [SFTRecord.model_validate(row) for row in jsonio.read_jsonl(tmp_path / "ds" / "sft" / "train.jsonl")]
    tok = load_tokenizer(str(tmp_path / "audit" / "tokenizer"), template="native")
    fast, plain = chain_records(tok, records), chain_records(tok, records, fast=False)

    def key(x):
        return (x.problem, str(x)) if isinstance(x, Exception) else x

    assert {k: key(v) for k, v in fast[0].items()} == {k: key(v) for k, v in plain[0].items()} and fast[2] == plain[2]
    assert [(c.actions, c.input_ids.tolist()) for c in fast[1]] == [(c.actions, c.input_ids.tolist()) for c in plain[1]]
    assert len(fast[1]) < sum(len(c.actions) for c in fast[1])  # real trajectories do chain
    cut = [c for c in (ch.cut(report.cap_applied) for ch in fast[1]) if c is not None]
    assert sorted(a.id for c in cut for a in c.actions) == sorted(
        a for row in table.column("action_ids").to_pylist() for a in row
    )
    st = report.layouts["train"]
    assert st.actions == len(cut_ids := [a for c in cut for a in c.actions]) and st.chains == len(cut) == table.num_rows
    assert st.chain_tokens == sum(c.n_tokens for c in cut) < st.record_tokens == sum(a.length for a in cut_ids)
