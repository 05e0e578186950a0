"""The trunk cache (``train.trunk``): running the adapted layers on the cached output of the frozen ones gives the
same per-token log-probabilities and the same adapter gradients as the whole forward, for packed and padded
batches; it stays out of the way where it cannot apply; and a two-pass training run ends with the same adapter
either way."""

from __future__ import annotations

import json

import pytest
import torch

from _helpers.tinyset import make_tiny_model
from harnessfit.train.trunk import TrunkCache, frozen_depth

UPPER = r".*\.layers\.(2|3)\.self_attn\.(q|v)_proj"


def _model(tmp_path, targets=UPPER, layers: int = 4, dropout: float = 0.0):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    folder = make_tiny_model(tmp_path / f"m{layers}", layers=layers, seed=3)
    base = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="sdpa", dtype=torch.float32)
    add_fused_lm_head(base, outputs=("log_probs", "entropy", "is_top1"))
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, lora_dropout=dropout, target_modules=targets))
    torch.manual_seed(0)
    for name, p in model.named_parameters():
        if "lora_B" in name:  # non-zero adapters, so the upper layers' output depends on them
            torch.nn.init.normal_(p, std=0.2)
    model.train()
    return model


def _rows(seed: int = 1) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 64, (n,), generator=g).tolist() for n in (17, 9, 23)]


def _packed(rows: list[list[int]]) -> dict:
    ids = [t for r in rows for t in r]
    labels = [t if i % 3 else -100 for i, t in enumerate(ids)]
    for start in [sum(len(r) for r in rows[:k]) for k in range(len(rows))]:
        labels[start] = -100
    pos = [i for r in rows for i in range(len(r))]
    return {
        "input_ids": torch.tensor([ids]),
        "labels": torch.tensor([labels]),
        "position_ids": torch.tensor([pos]),
    }


def _padded(rows: list[list[int]]) -> dict:
    width = max(len(r) for r in rows)
    ids = torch.ones((len(rows), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1
    labels = ids.clone()
    labels[mask == 0] = -100
    labels[:, ::4] = -100
    return {"input_ids": ids, "labels": labels, "attention_mask": mask}


def _loss_and_grads(model, run) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    model.zero_grad()
    out = run()
    loss = -(out.log_probs.sum())
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    return out.log_probs.detach(), loss.detach(), grads


@pytest.mark.parametrize("shape", [_packed, _padded])
def test_cached_trunk_gives_the_same_log_probs_and_adapter_gradients(tmp_path, shape) -> None:
    model = _model(tmp_path)
    assert frozen_depth(model) == 2
    rows = _rows()
    inputs = shape(rows)
    plain = _loss_and_grads(model, lambda: model(**inputs, use_cache=False, fused_lm_head=True))
    cache = TrunkCache(model, budget_bytes=2**30)
    for visit in range(2):  # the first visit fills the cache, the second reads it
        got = _loss_and_grads(model, lambda: cache.forward(model, dict(inputs), [10, 11, 12]))
        torch.testing.assert_close(got[0], plain[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(got[1], plain[1], atol=1e-4, rtol=1e-5)
        assert got[2].keys() == plain[2].keys() and len(got[2]) == 8
        for name, g in plain[2].items():
            assert g.abs().sum() > 0
            torch.testing.assert_close(got[2][name], g, atol=1e-5, rtol=1e-4)
        assert cache.verified is True
        assert (cache.misses, cache.hits) == ((3, 0) if visit == 0 else (3, 3))
    assert sorted(cache.rows) == [10, 11, 12] and [cache.rows[r].shape[0] for r in (10, 11, 12)] == [17, 9, 23]
    assert len(model.get_base_model().model.layers) == 4  # the layer stack is restored after each call


def test_a_full_budget_keeps_nothing_but_still_gives_the_same_numbers(tmp_path) -> None:
    model = _model(tmp_path)
    inputs = _packed(_rows())
    with torch.no_grad():
        plain = model(**inputs, use_cache=False, fused_lm_head=True).log_probs
        cache = TrunkCache(model, budget_bytes=1)
        got = cache.forward(model, dict(inputs), [0, 1, 2]).log_probs
    torch.testing.assert_close(got, plain, atol=1e-5, rtol=1e-5)
    assert cache.rows == {} and cache.facts()["rows_cached"] == 0 and cache.misses == 3


def test_adapter_dropout_above_the_trunk_does_not_turn_the_cache_off(tmp_path) -> None:
    """Dropout in the adapted layers makes two training forwards differ, but not the trunk: the self-check compares
    in eval mode, and the model is back in training mode after it."""
    model = _model(tmp_path, dropout=0.3)
    assert frozen_depth(model) == 2
    cache = TrunkCache(model, budget_bytes=2**30)
    assert cache.forward(model, _packed(_rows()), [0, 1, 2]) is not None
    assert cache.verified is True and model.training


def test_no_cache_where_it_cannot_apply(tmp_path) -> None:
    everywhere = _model(tmp_path, targets=["q_proj", "v_proj"])
    assert frozen_depth(everywhere) == 0
    cache = TrunkCache(everywhere, budget_bytes=2**30)
    assert not cache.active and cache.forward(everywhere, _packed(_rows()), [0, 1, 2]) is None
    assert "every step runs all layers" in cache.describe()
    model = _model(tmp_path, layers=4)
    cache = TrunkCache(model, budget_bytes=2**30)
    # a batch whose packed rows do not match the rows it names: the plain forward runs
    assert cache.forward(model, _packed(_rows()), [0, 1]) is None and cache.rows == {}


def test_a_model_whose_forward_treats_inputs_embeds_differently_turns_the_cache_off(tmp_path) -> None:
    model = _model(tmp_path)
    backbone = model.get_base_model().model
    original = backbone.forward

    def scaled(*args, inputs_embeds=None, **kwargs):  # like a model that scales its embeddings inside forward
        if inputs_embeds is not None:
            inputs_embeds = inputs_embeds * 2.0
        return original(*args, inputs_embeds=inputs_embeds, **kwargs)

    backbone.forward = scaled
    cache = TrunkCache(model, budget_bytes=2**30)
    assert cache.forward(model, _packed(_rows()), [0, 1, 2]) is None
    assert cache.verified is False and not cache.active and cache.rows == {}


def test_two_passes_train_the_same_adapter_with_and_without_the_cache(tiny_chains, tmp_path) -> None:
    """Real training (TRL's SFTTrainer with the per-action loss), two epochs over the tiny chains with an adapter on
    the second layer only: the run with the cache reads the first layer from it on the second pass and ends with
    the adapter of the run without it."""
    from safetensors.torch import load_file

    from harnessfit.train.config import load_sft_config
    from harnessfit.train.sft import train_sft

    results = {}
    for mode in ("off", "on"):
        cfg = load_sft_config(
            None,
            audit_dir=str(tiny_chains),
            lora_r=4,
            lora_alpha=8,
            lora_dropout=0.0,
            lora_target_modules=r".*\.layers\.1\.self_attn\.(q|v)_proj",
            learning_rate=1e-2,
            per_device_train_batch_size=2,
            num_train_epochs=2,
            eval_steps=1000,
            save_steps=1000,
            threads=1,
            trunk_cache=mode,
            seed=7,
            guard={"enabled": False},
        )
        res = train_sft(cfg, tmp_path / mode)
        assert res.status == "completed"
        results[mode] = (res, load_file(res.adapter_dir / "adapter_model.safetensors"))
    (off, w_off), (on, w_on) = results["off"], results["on"]
    assert off.data["trunk_cache"] is None
    facts = on.data["trunk_cache"]
    assert facts["frozen_layers"] == 1 and facts["verified"] is True
    assert facts["rows_cached"] == on.data["train_rows"] and facts["steps_from_cache"] == on.data["train_rows"]
    assert w_on.keys() == w_off.keys()
    for name, w in w_off.items():
        torch.testing.assert_close(w_on[name], w, atol=1e-5, rtol=1e-4)
    assert json.loads((tmp_path / "on" / "recipe.json").read_text())["resolved"]["trunk_cache"] == "on"
    report = (tmp_path / "on" / "train_report.md").read_text()
    rows = on.data["train_rows"]
    assert f"the output of layers 0-0 was computed {rows} times and read from the cache {rows} times" in report


def test_the_fused_head_scores_only_supervised_positions_with_the_same_numbers(tmp_path, monkeypatch) -> None:
    """On a CPU TRL's fused head scores every position unless compaction is on; with it on, the kernel sees only the
    supervised positions and the log-probabilities and gradients are the same."""
    from trl.trainer import utils as trl_utils

    from harnessfit.train.loss import _supervised_positions_only

    model = _model(tmp_path)
    inputs = _packed(_rows())
    seen: list[int] = []
    kernel = trl_utils._ChunkedLogProbFunction

    class Spy:
        @staticmethod
        def apply(hidden, *args):
            seen.append(hidden.shape[0])
            return kernel.apply(hidden, *args)

    monkeypatch.setattr(trl_utils, "_ChunkedLogProbFunction", Spy)
    every = _loss_and_grads(model, lambda: model(**inputs, use_cache=False, fused_lm_head=True))
    with _supervised_positions_only(True):
        compact = _loss_and_grads(model, lambda: model(**inputs, use_cache=False, fused_lm_head=True))
    assert trl_utils._use_triton(torch.device("cpu")) is False  # restored after the call
    supervised = int((inputs["labels"][:, 1:] != -100).sum())
    assert seen == [inputs["input_ids"].shape[1] - 1, supervised] and supervised < seen[0]
    torch.testing.assert_close(compact[0], every[0], atol=1e-6, rtol=1e-6)
    for name, g in every[2].items():
        torch.testing.assert_close(compact[2][name], g, atol=1e-6, rtol=1e-5)
