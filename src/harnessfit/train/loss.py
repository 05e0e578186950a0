"""Loss weighting over actions: the collator that marks which action each supervised token belongs to, and the
``SFTTrainer`` subclass whose loss weighs them.

- ``per_action`` (default): every action weighs like one record of the published per-action recipe: the mean of
  its tokens' negative log-likelihood, then the mean over the actions of the optimizer step. On chains this is the
  per-action-record objective of the same actions exactly (a chain's per-token losses are its records' losses).
- ``per_token``: every supervised token weighs the same (TRL's own loss: the sum over the step's supervised tokens
  divided by their number).

Both are ``sum(w * nll) / N`` over the tokens of an optimizer step, with ``w = 1 / tokens of its action`` and ``N``
the step's actions (``per_action``), or ``w = 1`` and ``N`` its supervised tokens (``per_token``); ``N`` reaches the
loss through the trainer's ``num_items_in_batch``, so gradient accumulation and several processes give the same
objective as one big batch. The held-out loss is the mean of the same items over the whole held-out split (each
action's mean, or each token), so it compares across layouts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import torch
from trl import SFTTrainer
from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

from harnessfit.train.trunk import TrunkCache

__all__ = ["LossWeighting", "ActionCollator", "ActionWeightedSFTTrainer", "action_losses"]

LossWeighting = Literal["per_action", "per_token"]
_EXTRA = ("action_index", "loss_items", "rows")


@contextmanager
def _supervised_positions_only(on: bool) -> Iterator[None]:
    """TRL's fused LM head projects only the supervised positions where Triton runs, and every position elsewhere,
    so that a compiled graph keeps one shape per batch (``trl/trainer/utils.py``, ``compact = _use_triton(...)``).
    Eager training recompiles nothing, and on a CPU scoring every position of a chain costs about ten times the
    head's work (a chain supervises about 1 token in 10: 177 of 1,861 in a median synth chain, 4 s of a 10 s step).
    While ``on``, the fused forward compacts on every device; the log-probabilities are the same numbers
    (``tests/train/test_trunk_cache.py``). Off under ``torch_compile``, where TRL's reason holds."""
    from trl.trainer import utils as trl_utils  # only here: the seam is TRL's, patched for the call's duration

    original = trl_utils._use_triton
    if on:
        trl_utils._use_triton = lambda device: True
    try:
        yield
    finally:
        trl_utils._use_triton = original


@dataclass
class ActionCollator:
    """TRL's language-modeling collator (padding-free packing or padding, unchanged) plus ``action_index``: for
    every label position, the index of its action within the batch (-1 where nothing is supervised), ``loss_items``
    (actions or supervised tokens in the batch, by ``weighting``) and ``rows`` (the dataset rows collated)."""

    pad_token_id: int
    padding_free: bool = True
    weighting: LossWeighting = "per_action"

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        base = DataCollatorForLanguageModeling(pad_token_id=self.pad_token_id, padding_free=self.padding_free)
        out = base([{"input_ids": e["input_ids"], "labels": e["labels"]} for e in examples])
        index = torch.full(out["labels"].shape, -1, dtype=torch.long)
        a = 0
        offset = 0
        for i, e in enumerate(examples):
            r, base_off = (0, offset) if self.padding_free else (i, 0)
            for s, t in zip(e["action_starts"], e["action_ends"], strict=True):
                index[r, base_off + s : base_off + t] = a
                a += 1
            offset += len(e["input_ids"])
        index[out["labels"] == -100] = -1
        out["action_index"] = index
        n_tokens = int((index >= 0).sum())
        out["loss_items"] = torch.tensor(a if self.weighting == "per_action" else n_tokens, dtype=torch.float32)
        out["rows"] = torch.tensor([int(e["row"]) for e in examples], dtype=torch.long)
        return out


def action_losses(nll: torch.Tensor, action_index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-action sum of ``nll`` and token count, for the label-aligned ``action_index`` (-1 = not supervised)."""
    valid = action_index >= 0
    n = int(action_index.max()) + 1 if valid.any() else 0
    idx = action_index[valid]
    sums = torch.zeros(n, dtype=nll.dtype, device=nll.device).index_add(0, idx, nll[valid])
    counts = torch.bincount(idx, minlength=n).to(nll.dtype)
    return sums, counts


class ActionWeightedSFTTrainer(SFTTrainer):
    """``SFTTrainer`` with the loss of ``loss.py``'s docstring. It also counts what training saw: the dataset rows
    (``rows_seen``) and the supervised tokens (``supervised_seen``) of every training micro-batch."""

    # ``compute_loss`` divides by the optimizer step's items (``num_items_in_batch``), so the trainer must not
    # divide again by the accumulation steps
    loss_is_scaled_for_ga = True

    def __init__(
        self, *args: Any, weighting: LossWeighting = "per_action", trunk_budget: int | None = None, **kwargs: Any
    ) -> None:
        self.weighting = weighting
        self.rows_seen: set[int] = set()
        self.supervised_seen = 0
        super().__init__(*args, **kwargs)
        # frozen lower layers computed once per row (``train.trunk``) when the fast path asks for it
        self.trunk = TrunkCache(self.model, budget_bytes=trunk_budget) if trunk_budget else None

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches, num_items = super().get_batch_samples(epoch_iterator, num_batches, device)
        if batches and "loss_items" in batches[0]:
            num_items = torch.stack([b["loss_items"] for b in batches]).sum().to(device)
            if self.args.average_tokens_across_devices and self.args.world_size > 1:
                num_items = self.accelerator.gather(num_items).sum()
        return batches, num_items

    def _weighted_nll(self, model, inputs: dict[str, Any], rows: list[int] | None = None):
        """Forward with the fused LM head; per-label-position nll (zero where not supervised) and the outputs. A
        training batch goes through the trunk cache when there is one (the same numbers, fewer layers run)."""
        with _supervised_positions_only(not self.args.torch_compile):
            outputs = None
            if self.trunk is not None and rows is not None and model.training:
                outputs = self.trunk.forward(model, inputs, rows)
            if outputs is None:
                outputs = model(**inputs, use_cache=False, fused_lm_head=True)
        return -outputs.log_probs, outputs

    def _token_weights(self, index: torch.Tensor, dtype) -> torch.Tensor:
        valid = index >= 0
        if self.weighting == "per_token":
            return valid.to(dtype)
        counts = torch.bincount(index[valid], minlength=int(index.max()) + 1 if valid.any() else 0).to(dtype)
        w = torch.zeros(index.shape, dtype=dtype, device=index.device)
        w[valid] = 1.0 / counts[index[valid]]
        return w

    def _log_metrics(self, mode: str, inputs: dict[str, Any], outputs) -> None:
        """The metrics TRL's own ``compute_loss`` logs (entropy, token accuracy, tokens seen)."""
        num_valid = self.accelerator.gather_for_metrics(outputs.label_mask.sum()).sum()
        entropy = self.accelerator.gather_for_metrics(outputs.entropy.detach().sum()).sum()
        correct = self.accelerator.gather_for_metrics(outputs.is_top1.sum()).sum()
        self._metrics[mode]["entropy"].append((entropy / num_valid).item() if num_valid > 0 else 0.0)
        self._metrics[mode]["mean_token_accuracy"].append((correct / num_valid).item() if num_valid > 0 else 0.0)
        if mode == "train":
            if "attention_mask" in inputs:
                local = inputs["attention_mask"].sum()
            else:
                local = torch.tensor(inputs["position_ids"].size(1), device=inputs["position_ids"].device)
            self._total_train_tokens += self.accelerator.gather_for_metrics(local).sum().item() // self._tp_size
        self._metrics[mode]["num_tokens"] = [self._total_train_tokens]

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if "action_index" not in inputs:
            return super().compute_loss(
                model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
            )
        index = inputs.pop("action_index")[:, 1:]
        items = inputs.pop("loss_items")
        rows = inputs.pop("rows")
        mode = "train" if self.model.training else "eval"
        nll, outputs = self._weighted_nll(model, inputs, rows.tolist())
        w = self._token_weights(index.to(nll.device), nll.dtype)
        denom = items if num_items_in_batch is None else num_items_in_batch
        loss = (nll * w).sum() / torch.as_tensor(denom, device=nll.device).clamp(min=1)
        if self.args.average_tokens_across_devices and num_items_in_batch is not None:
            loss = loss * (self.accelerator.num_processes // self.get_tp_size())
        if mode == "train":
            self.rows_seen.update(int(r) for r in rows)
            self.supervised_seen += int((index >= 0).sum())
        self._log_metrics(mode, inputs, outputs)
        return (loss, outputs) if return_outputs else loss

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        """Held-out loss items of one batch (each action's mean nll, or each token's nll): the evaluation loop
        concatenates them and takes their plain mean."""
        if "action_index" not in inputs:
            return super().prediction_step(model, inputs, prediction_loss_only, ignore_keys=ignore_keys)
        inputs = self._prepare_inputs(inputs)
        index = inputs.pop("action_index")[:, 1:]
        inputs.pop("loss_items")
        inputs.pop("rows")
        with torch.no_grad(), self.compute_loss_context_manager():
            nll, outputs = self._weighted_nll(model, inputs)
        index = index.to(nll.device)
        if self.weighting == "per_action":
            sums, counts = action_losses(nll, index)
            items = sums / counts.clamp(min=1)
        else:
            items = nll[index >= 0]
        self._log_metrics("eval", inputs, outputs)
        return items.detach(), None, None
