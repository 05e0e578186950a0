"""Held-out evaluation of a policy on decision points it never trained on: greedy and best-of-G, scored by the
same rewards as training (what the published run did not report: its numbers were the training judge's on
training prompts).

For each point the policy writes one greedy completion and G sampled ones (the training temperature). The summary
gives the mean reward of the greedy completion, the mean and the best of the G samples (best-of-G: the mean over
points of the best sample's reward), the valid-call rate (a turn whose calls all pass the card's validator), each
component's mean, and how many completions were unscorable.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import orjson

from harnessfit.rewards.reward_set import RewardSet, Scored

__all__ = ["generate", "evaluate_points", "summarise", "write", "HELDOUT_FILES"]

HELDOUT_FILES = {"before": "heldout_before.json", "after": "heldout_after.json"}


def generate(
    model,
    tokenizer,
    prompt_ids: list[int],
    *,
    n: int,
    sample: bool,
    temperature: float,
    max_new_tokens: int,
    stop_ids: list[int],
    seed: int,
) -> list[list[int]]:
    """``n`` completions of one prompt (greedy when ``sample`` is false), each cut after its first stop id."""
    import torch

    device = next(model.parameters()).device
    ids = torch.tensor([prompt_ids], dtype=torch.long, device=device)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stop_ids[0]
    torch.manual_seed(seed)
    kwargs: dict[str, Any] = {
        "do_sample": sample,
        "max_new_tokens": max_new_tokens,
        "eos_token_id": stop_ids,
        "pad_token_id": pad,
        "num_return_sequences": n,
    }
    if sample:
        kwargs.update(temperature=temperature, top_p=1.0, top_k=0)
    else:
        kwargs.update(temperature=None, top_p=None, top_k=None)
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **kwargs)
    if was_training:
        model.train()
    completions = []
    stops = set(stop_ids)
    for row in out[:, len(prompt_ids) :].tolist():
        cut = next((i + 1 for i, t in enumerate(row) if t in stops), len(row))
        completions.append(row[:cut])
    return completions


def evaluate_points(
    model,
    tokenizer,
    rows: list[dict[str, Any]],
    rewards: RewardSet,
    *,
    generations: int,
    temperature: float,
    max_new_tokens: int,
    seed: int,
    progress: bool = False,
) -> dict[str, Any]:
    """Greedy and ``generations`` samples per row, scored; returns the summary with per-point rows."""
    from rich.progress import Progress

    stop_ids = sorted(rewards.stop_ids)
    points = []
    with Progress(transient=True, disable=not progress) as bar:
        task = bar.add_task("held-out", total=len(rows))
        for k, row in enumerate(rows):
            prompt_ids = list(tokenizer(row["prompt"], add_special_tokens=False)["input_ids"])
            greedy = generate(
                model,
                tokenizer,
                prompt_ids,
                n=1,
                sample=False,
                temperature=temperature,
                max_new_tokens=max_new_tokens,
                stop_ids=stop_ids,
                seed=seed + k,
            )
            sampled = generate(
                model,
                tokenizer,
                prompt_ids,
                n=generations,
                sample=True,
                temperature=temperature,
                max_new_tokens=max_new_tokens,
                stop_ids=stop_ids,
                seed=seed + k,
            )
            samples = [
                rewards.sample(
                    ids, reference=row["reference"], tools=row["tools"], state=row["state"], dp_id=row["dp_id"]
                )
                for ids in greedy + sampled
            ]
            scored = rewards.score(samples)
            points.append(
                {
                    "dp_id": row["dp_id"],
                    "greedy": scored[0].row(),
                    "samples": [s.row() for s in scored[1:]],
                    "_scored": scored,
                }
            )
            bar.advance(task)
    summary = summarise(points, generations)
    summary["per_point"] = [{k: v for k, v in p.items() if k != "_scored"} for p in points]
    return summary


def _mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def summarise(points: list[dict[str, Any]], generations: int) -> dict[str, Any]:
    """The held-out numbers (see the module docstring) from per-point ``_scored`` lists (greedy first)."""
    greedy: list[Scored] = [p["_scored"][0] for p in points]
    groups: list[list[Scored]] = [p["_scored"][1:] for p in points]
    sampled = [s for g in groups for s in g]
    best = [max(r) for g in groups if (r := [s.reward for s in g if s.reward is not None])]
    names = list(greedy[0].scores) if greedy else []
    return {
        "points": len(points),
        "generations": generations,
        "greedy_reward": _mean([s.reward for s in greedy if s.reward is not None]),
        "mean_of_g_reward": _mean([s.reward for s in sampled if s.reward is not None]),
        "best_of_g_reward": _mean(best),
        "greedy_valid_call_rate": _mean([float(s.valid_call) for s in greedy]),
        "sampled_valid_call_rate": _mean([float(s.valid_call) for s in sampled]),
        "best_of_g_valid_call_rate": _mean([float(any(s.valid_call for s in g)) for g in groups]),
        "greedy_overlong_share": _mean([float(s.sample.truncated) for s in greedy]),
        "greedy_components": {
            n: _mean([s.scores[n].value for s in greedy if s.scores[n].value is not None]) for n in names
        },
        "unscorable": sum(s.reward is None for s in greedy + sampled),
        "completions": len(greedy) + len(sampled),
    }


def write(path: Path, summary: dict[str, Any]) -> Path:
    path.write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    return path
