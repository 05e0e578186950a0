"""Fixtures for the train tests: a tiny random Llama and a tokenized set in the audit's exact shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from _helpers.tinyset import make_tiny_model, write_chains, write_tokenized


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def tiny_audit(tmp_path_factory, tiny_model) -> Path:
    return write_tokenized(tmp_path_factory.mktemp("audit") / "audit", tiny_model)


@pytest.fixture(scope="session")
def tiny_chains(tmp_path_factory, tiny_model) -> Path:
    return write_chains(tmp_path_factory.mktemp("chains") / "audit", tiny_model)


@pytest.fixture()
def fast_recipe(tiny_audit):
    from harnessfit.train.config import load_sft_config

    def make(**kw):
        base = dict(
            audit_dir=str(tiny_audit),
            lora_r=8,
            lora_alpha=16,
            lora_dropout=0.0,
            learning_rate=2e-2,
            gradient_accumulation_steps=4,
            eval_steps=4,
            save_steps=4,
            threads=1,
            guard={"interval_s": 0.2, "min_free_disk_gib": 0.1, "min_host_mem_gib": 0.1},
        )
        base.update(kw)
        return load_sft_config(None, **base)

    return make
