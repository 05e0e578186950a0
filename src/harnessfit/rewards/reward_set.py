"""``RewardSet``: the recipe's components and weights as one TRL reward function, logging every component per
completion.

TRL calls it with the decoded completions, their token ids and the dataset's columns (``dp_id``, ``tools``,
``reference``, ``state``). The ids are decoded again here with special tokens kept, so the end-of-turn token and
the ``<tool_call>`` tags are seen as the model wrote them (TRL's own decoding drops special tokens).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harnessfit.rewards import JudgeSettings, RewardContext, Sample, Score, combine, components
from harnessfit.rewards.judge import JudgeClient
from harnessfit.rewards.verifiable import is_valid_call_turn, parse_completion

__all__ = ["Scored", "RewardSet"]

TEXT_LOG_CHARS = 4000


@dataclass
class Scored:
    """One completion's reward, every component's score, and what the log keeps."""

    sample: Sample
    reward: float | None
    scores: dict[str, Score]
    valid_call: bool

    @property
    def length(self) -> int:
        return len(self.sample.ids)

    def row(self) -> dict[str, Any]:
        verdict = self.sample.judge
        return {
            "dp_id": self.sample.dp_id,
            "reward": self.reward,
            "components": {k: s.value for k, s in self.scores.items()},
            "details": {k: s.detail for k, s in self.scores.items() if s.detail},
            "length": self.length,
            "truncated": self.sample.truncated,
            "valid_call": self.valid_call,
            "n_calls": len(self.sample.calls),
            "critique": getattr(verdict, "critique", None),
            "judge_reason": getattr(verdict, "reason", None),
            "text": self.sample.text[:TEXT_LOG_CHARS],
        }


def _loads(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


class RewardSet:
    """Callable reward for ``GRPOTrainer`` (and the held-out evaluation, through ``score``)."""

    __name__ = "reward"  # TRL logs rewards/reward/mean under this name

    def __init__(
        self,
        weights: dict[str, float],
        *,
        tokenizer: Any,
        stop_ids: list[int],
        card: Any,
        format_error_reward: float = -1.0,
        overlong_penalty: float = 0.0,
        judge: JudgeSettings | dict | None = None,
        log_path: Path | None = None,
        num_generations: int = 1,
        judge_client: Any = None,
    ) -> None:
        known = components()
        self.weights = dict(weights)
        self.names = [n for n in known if n in self.weights]
        self.tokenizer = tokenizer
        self.stop_ids = set(int(i) for i in stop_ids)
        self.ctx = RewardContext(card=card, format_error_reward=format_error_reward, overlong_penalty=overlong_penalty)
        self.judge_client = judge_client
        if self.judge_client is None and self.weights.get("judge"):
            settings = judge if isinstance(judge, JudgeSettings) else JudgeSettings(**(judge or {}))
            self.judge_client = JudgeClient(settings)
        self.log_path = Path(log_path) if log_path is not None else None
        self.num_generations = max(1, num_generations)
        self.rank = int(os.environ.get("RANK", "0"))

    # -- parsing and scoring ---------------------------------------------------------------------------------
    def sample(self, ids: list[int], *, reference: Any, tools: Any, state: Any = None, dp_id: str = "") -> Sample:
        """Parse one completion's ids (a final stop id means the turn ended; otherwise it was cut)."""
        ids = [int(i) for i in ids]
        ended = bool(ids) and ids[-1] in self.stop_ids
        body = ids[:-1] if ended else ids
        text = self.tokenizer.decode(body, skip_special_tokens=False)
        return parse_completion(
            text,
            ids,
            not ended,
            reference=_loads(reference) or {},
            tools=_loads(tools) or [],
            state=_loads(state) or [],
            dp_id=dp_id,
        )

    def score(self, samples: list[Sample]) -> list[Scored]:
        """Every component on every sample (judge verdicts requested together, concurrently)."""
        if self.judge_client is not None:
            for s, verdict in zip(samples, self.judge_client.score_many(samples), strict=True):
                s.judge = verdict
        known = components()
        out = []
        for s in samples:
            scores = {name: known[name].fn(s, self.ctx) for name in self.names}
            out.append(Scored(s, combine(scores, self.weights), scores, is_valid_call_turn(self.ctx.card, s)))
        return out

    # -- the TRL reward function -----------------------------------------------------------------------------
    def __call__(
        self,
        prompts: list,
        completions: list,
        completion_ids: list[list[int]],
        *,
        dp_id: list[str],
        tools: list[str],
        reference: list[str],
        state: list[str] | None = None,
        trainer_state: Any = None,
        log_extra: Any = None,
        log_metric: Any = None,
        **_: Any,
    ) -> list[float | None]:
        state = state or [None] * len(completion_ids)
        samples = [
            self.sample(ids, reference=r, tools=t, state=s, dp_id=d)
            for ids, r, t, s, d in zip(completion_ids, reference, tools, state, dp_id, strict=True)
        ]
        scored = self.score(samples)
        step = (trainer_state.global_step if trainer_state is not None else 0) + 1
        self._log(step, scored)
        if log_extra is not None:
            for name in self.names:
                log_extra(f"r_{name}", [x.scores[name].value for x in scored])
            if self.judge_client is not None:
                log_extra("critique", [getattr(x.sample.judge, "critique", None) for x in scored])
        if log_metric is not None:
            for name in self.names:
                vals = [x.scores[name].value for x in scored if x.scores[name].value is not None]
                if vals:
                    log_metric(f"rewards/{name}/mean", sum(vals) / len(vals))
            n = len(scored)
            log_metric("rewards/unscorable_frac", sum(x.reward is None for x in scored) / n)
            log_metric("completions/overlong_frac", sum(x.sample.truncated for x in scored) / n)
            log_metric("completions/valid_call_frac", sum(x.valid_call for x in scored) / n)
        return [x.reward for x in scored]

    def _log(self, step: int, scored: list[Scored]) -> None:
        """Append one row per completion to the run's completions log (this process's own file)."""
        if self.log_path is None:
            return
        path = (
            self.log_path if self.rank == 0 else self.log_path.with_name(f"{self.log_path.stem}.rank{self.rank}.jsonl")
        )
        offset = self.rank * len(scored)
        with path.open("ab") as fh:
            for i, x in enumerate(scored):
                row = {"step": step, "group": (offset + i) // self.num_generations, "index": offset + i, **x.row()}
                fh.write(orjson.dumps(row) + b"\n")
