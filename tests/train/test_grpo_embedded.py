"""The real chain for GRPO on the embedded model (SmolLM2-135M, CPU): build → audit → `train_grpo` for 2 steps on
the build's decision points with the verifiable rewards, held-out before and after. Pi's system prompt and tool
schemas make every prompt ~1,600 tokens; completions are capped at 8 tokens and the adapter sits on one layer so
that two steps fit the test budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.tokens import audit
from harnessfit.train.config import load_grpo_config
from harnessfit.train.grpo import train_grpo


@pytest.mark.slow
def test_grpo_two_steps_on_the_embedded_model(traces_dir: Path, tmp_path: Path) -> None:
    cfg = config_from_values(
        inputs=[str(traces_dir / "openhands")], parquet=False, split={"train": 1.0, "validation": 0.0, "test": 0.0}
    )
    build_dataset(cfg, tmp_path, out=tmp_path / "ds")
    audit(tmp_path / "ds", "embedded", tmp_path / "ds-audit", progress=False)
    recipe = load_grpo_config(
        None,
        audit_dir=str(tmp_path / "ds-audit"),
        num_generations=2,
        per_device_train_batch_size=2,
        max_completion_length=8,
        max_steps=2,
        save_steps=2,
        learning_rate=1e-4,
        warmup_steps=0,
        lora_r=2,
        lora_alpha=4,
        lora_dropout=0.0,
        lora_target_modules=["layers.29.self_attn.q_proj"],
        max_train_records=2,
        heldout_max_records=1,
        heldout_generations=2,
        threads=1,
        guard={"enabled": False},
        eval_split="train",
    )  # a handful of traces: the chain is under test, not the split
    res = train_grpo(recipe, tmp_path / "grpo")
    assert res.status == "completed" and res.global_step == 2
    rows = [json.loads(x) for x in res.completions_path.read_text().splitlines()]
    assert len(rows) == 4 and all(r["reward"] is not None and 0 < r["length"] <= 8 for r in rows)
    assert all(set(r["components"]) >= {"format", "schema_valid", "reference_match", "clean_end"} for r in rows)
    pinned = json.loads((res.adapter_dir / "harnessfit_adapter.json").read_text())
    meta = json.loads((tmp_path / "ds-audit" / "tokenized" / "meta.json").read_text())
    assert pinned["base_model"] == "embedded" and pinned["template_sha256"] == meta["template_sha256"]
    assert res.heldout_before["points"] == 1 and res.heldout_after["points"] == 1
    assert "Welch's t" in res.report_path.read_text()
