"""SFT selects a fidelity tier: with ``fidelity: byte`` no action whose context holds a content-tier result (an
output the source agent trimmed or stripped) is trained on; each chain is cut before its first such action."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.tokens import audit
from harnessfit.train.data import SkipReason, load_split, sft_fidelity


@pytest.mark.slow
def test_byte_tier_leaves_content_actions_out(traces_dir: Path, tmp_path: Path) -> None:
    cfg = config_from_values(
        inputs=[str(traces_dir / "openhands"), str(traces_dir / "claude_code")],
        parquet=False,
        split={"train": 1.0, "validation": 0.0, "test": 0.0},
    )
    build_dataset(cfg, tmp_path, out=tmp_path / "ds")
    audit(tmp_path / "ds", "embedded", tmp_path / "audit", progress=False)
    content = sft_fidelity(tmp_path / "ds", "train", "byte")
    assert content and set(content.values()) == {"content"}
    assert sft_fidelity(tmp_path / "ds", "train", "content") == {}
    every = load_split(tmp_path / "audit", "train")
    byte = load_split(tmp_path / "audit", "train", not_selected=content)
    trained_all = {a for acts in every.action_ids for a in acts}
    trained_byte = {a for acts in byte.action_ids for a in acts}
    assert content.keys() <= trained_all  # without selection they are trained on
    assert not trained_byte & content.keys() and trained_byte == trained_all - content.keys()
    skipped = {s.record_id for s in byte.skipped if s.reason == SkipReason.fidelity_not_selected}
    assert skipped == content.keys() & trained_all
