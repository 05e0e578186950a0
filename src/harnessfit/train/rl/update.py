"""The update: TRL's own GRPO/DAPO loss over every sampled token of every turn, then one AdamW step.

The loss is ``GRPOTrainer._compute_loss`` itself, called on a ``GRPOTrainer`` built around the policy (it owns the
loss settings: ``loss_type``, ``epsilon``/``epsilon_high``, ``beta``, ``importance_sampling_level``, the
temperature its log-probabilities divide by, its metrics). Each segment (``train.rl.episodes``) is one row in
TRL's multi-turn tool shape: ``prompt_ids`` = the first turn's prompt, ``completion_ids`` = everything after it,
``completion_mask`` 1 on every real token (attention), ``tool_mask`` 1 exactly on the sampled ids of rewarded
turns (TRL's mask for tool-result tokens inside a completion), ``old_per_token_logps`` the captured processed
logprobs, ``advantages`` the episode's group-relative advantage. TRL's loop (``GRPOTrainer.train``) is not used:
it generates its own completions; here the episodes come from the real harness.

Normalisation as TRL does over one generation batch: the step's segments are its micro-batches —
``current_gradient_accumulation_steps`` and ``steps_per_generation`` are the segment count and
``num_items_in_batch`` the step's sampled tokens, so ``dapo`` sums over every sampled token of the step and divides
once by their number; ``grpo``/``bnpo`` average per segment. With ``beta`` > 0 the reference is the base without
the adapter (TRL's PEFT reference), scored by TRL's ``_get_per_token_logps_and_entropies``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

__all__ = ["Updater", "segment_inputs"]


def segment_inputs(seg: Any, advantage: float, n_tokens: int) -> dict[str, torch.Tensor]:
    """One segment as TRL's ``_compute_loss`` inputs (batch of one)."""
    p = seg.prompt_len
    ids = torch.tensor([seg.ids], dtype=torch.long)
    return {
        "prompt_ids": ids[:, :p],
        "prompt_mask": torch.ones_like(ids[:, :p]),
        "completion_ids": ids[:, p:],
        "completion_mask": torch.ones_like(ids[:, p:]),
        "tool_mask": torch.tensor([seg.mask[p:]], dtype=torch.long),
        "old_per_token_logps": torch.tensor([seg.old_logps[p:]], dtype=torch.float32),
        "advantages": torch.tensor([float(advantage)], dtype=torch.float32),
        "num_items_in_batch": torch.tensor(float(n_tokens)),
    }


def _never(*_: Any, **__: Any) -> list[float]:
    raise RuntimeError("train rl scores episodes itself; TRL's reward functions are never called")


class Updater:
    """Owns the TRL trainer (for its loss) and the optimizer of the policy's trainable weights."""

    def __init__(self, cfg: Any, model: Any, tokenizer: Any) -> None:
        from datasets import Dataset
        from trl import GRPOTrainer

        self.cfg, self.model = cfg, model
        self.trainer = GRPOTrainer(
            model=model,
            reward_funcs=[_never],
            args=cfg,
            processing_class=tokenizer,
            train_dataset=Dataset.from_list([{"prompt": "unused"}]),
        )
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)

    def _ref_logps(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        with torch.no_grad(), self.model.disable_adapter():
            logps, _ = self.trainer._get_per_token_logps_and_entropies(
                self.model, ids, torch.ones_like(ids), inputs["completion_ids"].size(1)
            )
        return logps

    def step(self, batch: Sequence[tuple[Any, float]]) -> dict[str, float]:
        """One optimizer step over ``(segment, advantage)`` pairs; returns TRL's loss metrics for the step."""
        batch = [(s, a) for s, a in batch if s.sampled > 0]
        if not batch:
            return {"loss": float("nan"), "segments": 0, "sampled_tokens": 0}
        n_tokens = sum(s.sampled for s, _ in batch)
        tr = self.trainer
        tr.current_gradient_accumulation_steps = len(batch)
        tr.args.steps_per_generation = len(batch)
        tr._metrics["train"].clear()
        self.model.train()
        total = 0.0
        try:
            for seg, adv in batch:
                inputs = segment_inputs(seg, adv, n_tokens)
                if tr.beta != 0.0:
                    inputs["ref_per_token_logps"] = self._ref_logps(inputs)
                loss = tr._compute_loss(self.model, inputs)
                loss.backward()
                total += float(loss.detach())
            grad_norm = torch.nn.utils.clip_grad_norm_(
                [p for p in self.model.parameters() if p.requires_grad], self.cfg.max_grad_norm
            )
            self.optimizer.step()
        finally:
            self.optimizer.zero_grad(set_to_none=True)
            self.model.eval()
        out = {"loss": total, "grad_norm": float(grad_norm), "segments": len(batch), "sampled_tokens": n_tokens}
        for key, vals in tr._metrics["train"].items():
            vals = [float(v) for v in vals if v == v]
            if vals:
                out[key] = sum(vals) / len(vals)
        return out
