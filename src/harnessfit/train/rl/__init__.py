"""``harnessfit train rl``: multi-turn RL with the real Pi as the environment, token-exact.

Each step runs G real Pi episodes per task (the eval runner: sandbox, caps, independent checker) against the
policy being trained, served from this process with capture on (``policy``); the episode's turns come from the
capture, linked by exact token prefix (``episodes``); the episode's reward combines the checker, the complete loop,
the per-turn verifiable components and the turn-cap / runaway penalties, None when unscored (``rewards``); the
update is TRL's GRPO/DAPO loss over every sampled token with group-relative advantages (``update``); ``loop`` runs
the steps with resume (``state``), metrics, TensorBoard and the health guard; ``report`` writes the section.
"""

from __future__ import annotations

__all__ = ["HarnessfitRLConfig", "train_rl"]


def __getattr__(name: str):
    if name == "HarnessfitRLConfig":
        from harnessfit.train.rl.config import HarnessfitRLConfig  # heavy: pulls torch/trl, on use only

        return HarnessfitRLConfig
    if name == "train_rl":
        from harnessfit.train.rl.loop import train_rl  # heavy: pulls torch and fastapi/uvicorn, on use only

        return train_rl
    raise AttributeError(name)
