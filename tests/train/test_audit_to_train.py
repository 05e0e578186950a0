"""The real chain on real data: build → audit (embedded SmolLM2) → train_sft for 2 steps on the audit folder.

Catches drift between what the audit writes (meta.json keys, tokenizer/, tokenized/) and what training reads;
tests that hand-write a tokenized set (_helpers/tinyset.py) cannot. Pi's system prompt and tool schemas come first in every
record, so records are ≥ ~1,550 tokens: max_record_length is set above that, and no held-out split is built (2 steps of
~1.6 k tokens on one CPU thread are the whole budget)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.serve.sources import recorded_stop_ids, resolve_source
from harnessfit.tokens import audit
from harnessfit.train.config import load_sft_config
from harnessfit.train.sft import train_sft


@pytest.mark.slow
def test_train_two_steps_on_a_real_audit(traces_dir: Path, tmp_path: Path) -> None:
    cfg = config_from_values(
        inputs=[str(traces_dir / "openhands")], parquet=False, split={"train": 1.0, "validation": 0.0, "test": 0.0}
    )
    build_dataset(cfg, tmp_path, out=tmp_path / "ds")
    report = audit(tmp_path / "ds", "embedded", tmp_path / "ds-audit", progress=False)
    assert report.tokenized.get("train", 0) >= 2 and report.lengths["min"] >= 1000
    meta = json.loads((tmp_path / "ds-audit" / "tokenized" / "meta.json").read_bytes())

    # LoRA on the last layer's q_proj only: the backward pass stops there, which halves the CPU time
    recipe = load_sft_config(
        None,
        audit_dir=str(tmp_path / "ds-audit"),
        lora_r=2,
        lora_alpha=4,
        lora_dropout=0.0,
        lora_target_modules=["layers.29.self_attn.q_proj"],
        gradient_accumulation_steps=1,
        max_steps=2,
        save_steps=2,
        eval_steps=2,
        max_train_records=2,
        max_record_length=4096,
        threads=1,
        guard={"enabled": False},
    )
    res = train_sft(recipe, tmp_path / "train")
    assert res.status == "completed" and res.global_step == 2
    losses = [r["loss"] for r in map(json.loads, res.metrics_path.read_text().splitlines()) if "loss" in r]
    assert len(losses) == 2 and all(0 < x < 20 for x in losses)
    pinned = json.loads((res.adapter_dir / "harnessfit_adapter.json").read_bytes())
    assert pinned["base_model"] == "embedded" == meta["model"]
    assert pinned["base_model_path"] == meta["resolved"]
    assert pinned["template"] == meta["template_name"] and pinned["template_sha256"] == meta["template_sha256"]
    assert pinned["stop_token_ids"] == meta["stop_token_ids"] and pinned["stop_token_ids"]
    # serving the adapter finds the same end-of-turn ids the masks were built with
    source = resolve_source("embedded", adapter=res.adapter_dir)
    assert set(meta["stop_token_ids"]) <= set(recorded_stop_ids(source))
