"""Loss weighting over actions: ``per_action`` on chains is the per-action-record loss of the same actions, for the
training loss and the held-out loss; ``per_token`` is TRL's own loss; both layouts train exactly the same actions."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig

from harnessfit.train.data import load_split
from harnessfit.train.loss import ActionCollator, ActionWeightedSFTTrainer


def _record_losses(model, split) -> list[list[float]]:
    """The definition, without the trainer: each record alone through the model, the nll of each supervised token."""
    out = []
    with torch.no_grad():
        for row in split.dataset:
            logits = model(input_ids=torch.tensor([row["input_ids"]])).logits[0, :-1]
            nll = torch.nn.functional.cross_entropy(logits, torch.tensor(row["input_ids"][1:]), reduction="none")
            labels = torch.tensor(row["labels"][1:])
            out.append(nll[labels != -100].tolist())
    return out


def _trainer(tiny_model, tmp_path, split, weighting: str, padding_free: bool = True):
    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    args = SFTConfig(
        output_dir=str(tmp_path / weighting),
        use_cpu=True,
        bf16=False,
        report_to="none",
        padding_free=False,
        remove_unused_columns=False,
        per_device_eval_batch_size=1,
        eval_on_start=False,
        eval_strategy="no",
        max_length=None,
        dataset_num_proc=None,
    )
    coll = ActionCollator(pad_token_id=tok.pad_token_id, padding_free=padding_free, weighting=weighting)
    return ActionWeightedSFTTrainer(
        model=model,
        args=args,
        train_dataset=split.dataset,
        eval_dataset=split.dataset,
        processing_class=tok,
        data_collator=coll,
        weighting=weighting,
    )


@pytest.mark.parametrize("padding_free", [True, False])
def test_per_action_on_chains_is_the_per_action_record_loss(tiny_model, tiny_chains, tmp_path, padding_free) -> None:
    chains = load_split(tiny_chains, "train")
    records = load_split(tiny_chains, "train", layout="records")
    assert chains.n_actions == records.n_actions == len(records.ids) > len(chains.ids)
    assert sorted(a for acts in chains.action_ids for a in acts) == sorted(records.ids)
    assert chains.n_supervised == records.n_supervised and chains.n_tokens < records.n_tokens
    results = {}
    for name, split in (("chains", chains), ("records", records)):
        for weighting in ("per_action", "per_token"):
            tr = _trainer(tiny_model, tmp_path / name, split, weighting, padding_free)
            tr.model.eval()
            batch = tr.data_collator([split.dataset[i] for i in range(len(split.dataset))])  # one batch: every action
            with torch.no_grad():
                results[name, weighting] = float(tr.compute_loss(tr.model, dict(batch)))
            if weighting == "per_action" and padding_free:
                results[name, "eval"] = tr.evaluate()["eval_loss"]
            if name == "records" and weighting == "per_token":  # TRL's own loss on the same batch
                stock = {k: v for k, v in batch.items() if k not in ("action_index", "loss_items", "rows")}
                with torch.no_grad():
                    results["stock"] = float(tr.compute_loss(tr.model, stock))
            per_record = _record_losses(tr.model, records)
    per_action = sum(sum(x) / len(x) for x in per_record) / len(per_record)
    per_token = sum(sum(x) for x in per_record) / sum(len(x) for x in per_record)
    assert abs(per_action - per_token) > 1e-3  # the two weightings differ here, so the checks below can fail
    for layout in ("chains", "records"):
        assert results[layout, "per_action"] == pytest.approx(per_action, rel=1e-5, abs=1e-6)
        assert results[layout, "per_token"] == pytest.approx(per_token, rel=1e-5, abs=1e-6)
    assert results["stock"] == pytest.approx(per_token, rel=1e-5)
    if padding_free:  # held-out loss: the mean over actions of each action's mean, in both layouts
        assert results["chains", "eval"] == pytest.approx(per_action, rel=1e-5)
        assert results["records", "eval"] == pytest.approx(per_action, rel=1e-5)


def test_max_length_and_max_records_cut_chains_like_records(tiny_chains) -> None:
    full = load_split(tiny_chains, "train", layout="records")
    cap = sorted(full.lengths)[len(full.lengths) // 2]
    for kw in ({"max_length": cap}, {"max_records": 5}, {"max_length": cap, "max_records": 3}):
        c, r = load_split(tiny_chains, "train", **kw), load_split(tiny_chains, "train", layout="records", **kw)
        assert [a for acts in c.action_ids for a in acts] == r.ids
        assert sorted((s.record_id, s.reason) for s in c.skipped) == sorted((s.record_id, s.reason) for s in r.skipped)
        assert all(n <= cap for n in c.lengths) if "max_length" in kw else True
    nothing = load_split(tiny_chains, "train", max_length=8)
    assert nothing.empty and "no trainable actions" in nothing.why_empty() and "over_max_length" in nothing.why_empty()
