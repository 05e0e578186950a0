"""Stage machinery shared by convert and build: one ordered process pool (``executor``) and one per-stage clock
(``stats``); and the run's data funnel (``funnel``), read from what every stage wrote."""

from __future__ import annotations

from harnessfit.pipeline.executor import ordered_map
from harnessfit.pipeline.stats import StageClock

__all__ = ["ordered_map", "StageClock"]
