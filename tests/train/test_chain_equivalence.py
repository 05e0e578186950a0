"""Equivalence, proven on real trajectories: the embedded model (fp32) gives every action the same per-token losses,
and a LoRA layer the same gradients, whether the actions are trained as per-action records or as the audit's chains.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.tokens import audit
from harnessfit.train.data import load_split


def _per_action_nll(model, split) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Per-token nll of every action (by action id) and their per-action mean summed (the loss whose gradient is
    compared), one row at a time."""
    out: dict[str, torch.Tensor] = {}
    total = torch.zeros(())
    for row, acts in zip(split.dataset, split.action_ids, strict=True):
        ids = torch.tensor([row["input_ids"]])
        logits = model(input_ids=ids).logits[0, :-1].float()
        nll = torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="none")
        for aid, s, e in zip(acts, row["action_starts"], row["action_ends"], strict=True):
            out[aid] = nll[s - 1 : e - 1]  # the nll of predicting tokens s..e-1
            total = total + out[aid].mean()
    return out, total


@pytest.mark.slow
def test_chains_and_records_give_the_same_losses_and_lora_gradients(traces_dir: Path, tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model

    from harnessfit.models import load_model

    # small real sessions whose exact actions make chains of several actions (OpenHands and Claude Code command
    # results are never Pi's text, so their exact prefixes are short)
    claude = traces_dir / "claude_code" / "iampkuhz__feipi-session-browser__8a283a61-e3f0-4e8f-ba06-6711e2fcf2ed.jsonl"
    cfg = config_from_values(
        inputs=[str(traces_dir / "openhands"), str(claude)],
        parquet=False,
        split={"train": 1.0, "validation": 0.0, "test": 0.0},
    )
    build_dataset(cfg, tmp_path, out=tmp_path / "ds")
    audit(tmp_path / "ds", "embedded", tmp_path / "audit", progress=False)
    chains = load_split(tmp_path / "audit", "train")
    records = load_split(tmp_path / "audit", "train", layout="records")
    assert chains.n_actions == records.n_actions >= 4 and max(len(a) for a in chains.action_ids) >= 2
    assert chains.n_tokens < records.n_tokens

    torch.manual_seed(0)
    model = load_model("embedded", dtype=torch.float32)
    lora = LoraConfig(
        r=4,
        lora_alpha=8,
        lora_dropout=0.0,
        target_modules=["layers.29.self_attn.q_proj"],
        task_type="CAUSAL_LM",
        init_lora_weights=False,
    )  # non-zero B: the adapter changes the output
    model = get_peft_model(model, lora).eval()
    params = [p for p in model.parameters() if p.requires_grad]
    results = {}
    for name, split in (("chains", chains), ("records", records)):
        model.zero_grad()
        nll, total = _per_action_nll(model, split)
        total.backward()
        results[name] = ({k: v.detach() for k, v in nll.items()}, [p.grad.clone() for p in params])
    (nc, gc), (nr, gr) = results["chains"], results["records"]
    assert nc.keys() == nr.keys()
    for aid in nc:
        assert nc[aid].shape == nr[aid].shape and nc[aid].numel() > 0
        # fp32, sums in another order over contexts of different lengths: 1e-5 relative to the nll (up to ~10 nats
        # on these actions) plus 1e-5; a token shifted by one position differs by whole nats
        assert torch.allclose(nc[aid], nr[aid], rtol=1e-5, atol=1e-5), (aid, float((nc[aid] - nr[aid]).abs().max()))
    for a, b in zip(gc, gr, strict=True):
        assert a.abs().max() > 0
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-5 * float(b.abs().max())), float((a - b).abs().max())
