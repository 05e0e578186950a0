"""Running only the layers that learn: a cache of what the frozen lower layers compute for each training row.

When adapters sit on the top layers only (the CPU demo recipe puts them on SmolLM2's layers 20-29), the embedding
and the layers below have no trainable parameter and no dropout, so for a given row their output (the hidden state
that enters the first adapted layer) is the same at every step. ``TrunkCache`` computes it once per row, the first
time the row is trained on (under ``no_grad``), and from then on runs the model from that layer up, with the cached
state as ``inputs_embeds``. The loss is the same number and the adapter's gradient the same tensor as with the whole
forward (``tests/train/test_trunk_cache.py``); a later pass over a row costs the adapted layers only.

Why our own: TRL's ``SFTTrainer`` and PEFT always run the whole backbone, and neither offers a cache of frozen
activations. The cache checks itself: before its first cached step it computes one batch both ways and turns itself
off, with a note, if the per-token log-probabilities differ (a model whose forward treats ``inputs_embeds``
differently from its own embedding output, for example one that scales them, or whose layers are not plain stacked
blocks).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

__all__ = ["TrunkCache", "frozen_depth", "trunk_cache_bytes"]

_TOLERANCE = 1e-4  # on per-token log-probabilities, plain forward vs cached trunk (fp32 gives ~1e-6)


class _Reached(Exception):
    """Raised by a hook on the first adapted layer once the trunk's output is captured: nothing above it runs."""


def _backbone(model: Any) -> Any:
    """The decoder stack (the module holding ``layers``) of a causal LM, PEFT- or DDP-wrapped or not; None if it has
    no such stack."""
    model = getattr(model, "module", model)  # DistributedDataParallel holds the model as .module
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner = getattr(base, getattr(base, "base_model_prefix", "model"), None)
    return inner if inner is not None and hasattr(inner, "layers") else None


def _has_dropout(module: nn.Module) -> bool:
    cfg_p = getattr(getattr(module, "config", None), "attention_dropout", 0.0) or 0.0
    return cfg_p > 0 or any(isinstance(m, nn.Dropout) and m.p > 0 for m in module.modules())


def frozen_depth(model: Any) -> int:
    """How many leading decoder layers of ``model`` are frozen: no trainable parameter in them or in the input
    embedding, and no dropout (their output must be a function of the row alone). 0 when the cache cannot apply."""
    backbone = _backbone(model)
    if backbone is None:
        return 0
    embed = backbone.get_input_embeddings()
    if any(p.requires_grad for p in embed.parameters()) or _has_dropout(embed):
        return 0
    if (getattr(backbone.config, "attention_dropout", 0.0) or 0.0) > 0:
        return 0
    depth = 0
    for layer in backbone.layers:
        if any(p.requires_grad for p in layer.parameters()) or _has_dropout(layer):
            break
        depth += 1
    return depth if depth < len(backbone.layers) else 0


def trunk_cache_bytes(lengths: list[int], model_cfg: Any, dtype_bytes: int) -> int:
    """Memory the cache takes once every row is cached: one hidden state per token."""
    return sum(lengths) * int(getattr(model_cfg, "hidden_size", 0) or 0) * dtype_bytes


@contextmanager
def _upper_layers(backbone: Any, depth: int) -> Iterator[None]:
    """The backbone with only its layers from ``depth`` up (restored on exit)."""
    layers = backbone.layers
    backbone.layers = nn.ModuleList(list(layers)[depth:])
    try:
        yield
    finally:
        backbone.layers = layers


def _trunk_output(backbone: Any, ids: torch.Tensor, depth: int) -> torch.Tensor:
    """The hidden state entering layer ``depth`` for one row (``ids``: [1, T]), computed by the backbone's own
    forward, stopped there."""
    captured: dict[str, torch.Tensor] = {}

    def grab(_module, args, kwargs):
        captured["h"] = args[0] if args else kwargs["hidden_states"]
        raise _Reached

    handle = backbone.layers[depth].register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with torch.no_grad():
            backbone(input_ids=ids, use_cache=False)
    except _Reached:
        pass
    finally:
        handle.remove()
    return captured["h"][0]


def _segments(inputs: dict[str, Any], n_rows: int) -> list[tuple[int, int, int]] | None:
    """(batch row, start, end) of each dataset row in the batch: several rows packed into one (padding-free, the
    positions restart at 0), or one row each, right-padded. None for any other shape (the plain forward runs)."""
    ids = inputs["input_ids"]
    if ids.shape[0] == 1 and "position_ids" in inputs and "attention_mask" not in inputs:
        starts = torch.nonzero(inputs["position_ids"][0] == 0).flatten().tolist()
        if len(starts) != n_rows or (starts and starts[0] != 0):
            return None
        ends = [*starts[1:], ids.shape[1]]
        return [(0, s, e) for s, e in zip(starts, ends, strict=True)]
    if ids.shape[0] == n_rows:
        mask = inputs.get("attention_mask")
        if mask is None:
            return [(i, 0, ids.shape[1]) for i in range(n_rows)]
        lengths = mask.sum(dim=1).tolist()
        if not all(bool(mask[i, :n].all()) for i, n in enumerate(lengths)):
            return None  # not right-padded
        return [(i, 0, int(n)) for i, n in enumerate(lengths)]
    return None


class TrunkCache:
    """Per-row hidden states at the first adapted layer, filled as rows are first trained on (see the module doc).

    ``forward`` returns the model's fused-head outputs for a training batch, or None where the plain forward must
    run (the batch's shape is not one the cache knows, or the self-check failed)."""

    def __init__(self, model: Any, *, budget_bytes: int) -> None:
        self.depth = frozen_depth(model)
        self.budget_bytes = budget_bytes
        self.rows: dict[int, torch.Tensor] = {}
        self.stored_bytes = 0
        self.verified: bool | None = None  # None until the first batch has been computed both ways
        self.hits = 0
        self.misses = 0

    @property
    def active(self) -> bool:
        return self.depth > 0 and self.verified is not False

    def describe(self) -> str:
        if self.depth == 0:
            return "trunk cache: no frozen layer below the first adapted one (or dropout there), so every step runs all layers"
        return f"trunk cache: layers 0-{self.depth - 1} are frozen; their output is computed once per row"

    def facts(self) -> dict[str, Any]:
        """What the cache did, for the run's report (``steps_from_cache``: row visits served from the cache, one per
        step at one row per step; ``rows_computed``: row visits whose trunk was computed)."""
        return {
            "frozen_layers": self.depth,
            "verified": self.verified,
            "rows_cached": len(self.rows),
            "cached_mib": round(self.stored_bytes / 2**20, 1),
            "steps_from_cache": self.hits,
            "rows_computed": self.misses,
        }

    def _hidden(self, backbone: Any, row: int, ids: torch.Tensor) -> torch.Tensor:
        h = self.rows.get(row)
        if h is not None and h.shape[0] == ids.shape[0]:
            self.hits += 1
            return h.to(ids.device)
        self.misses += 1
        h = _trunk_output(backbone, ids[None], self.depth)
        size = h.numel() * h.element_size()
        if self.stored_bytes + size <= self.budget_bytes:
            self.rows[row] = h.to("cpu")
            self.stored_bytes += size
        return h

    def _embeds(self, backbone: Any, inputs: dict[str, Any], rows: list[int]) -> torch.Tensor | None:
        segs = _segments(inputs, len(rows))
        if segs is None:
            return None
        ids = inputs["input_ids"]
        out = None
        for row, (b, s, e) in zip(rows, segs, strict=True):
            h = self._hidden(backbone, row, ids[b, s:e])
            if out is None:
                out = torch.zeros((*ids.shape, h.shape[-1]), dtype=h.dtype, device=ids.device)
            out[b, s:e] = h
        return out

    def forward(self, model: Any, inputs: dict[str, Any], rows: list[int]) -> Any | None:
        if not self.active:
            return None
        backbone = _backbone(model)
        if backbone is None:
            return None
        embeds = self._embeds(backbone, inputs, rows)
        if embeds is None:
            return None
        rest = {k: v for k, v in inputs.items() if k != "input_ids"}
        if self.verified is None:
            self.verified = self._agrees(model, backbone, inputs, rest, embeds)
            if not self.verified:
                self.rows.clear()
                self.stored_bytes = 0
                return None
        with _upper_layers(backbone, self.depth):
            return model(**rest, inputs_embeds=embeds, use_cache=False, fused_lm_head=True)

    def _agrees(self, model: Any, backbone: Any, inputs: dict, rest: dict, embeds: torch.Tensor) -> bool:
        """Per-token log-probabilities of one batch, whole forward vs cached trunk: equal within ``_TOLERANCE``. Both
        run in eval mode, so the adapters' own dropout (above the trunk) does not make them differ."""
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                plain = model(**inputs, use_cache=False, fused_lm_head=True).log_probs
                with _upper_layers(backbone, self.depth):
                    cached = model(**rest, inputs_embeds=embeds, use_cache=False, fused_lm_head=True).log_probs
        finally:
            model.train(was_training)
        return plain.shape == cached.shape and bool(torch.allclose(plain, cached, atol=_TOLERANCE, rtol=_TOLERANCE))
