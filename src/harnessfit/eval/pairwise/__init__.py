"""Blinded pairwise judging of two raw runs (each pair judged twice, the order reversed; order-sensitive and
unparseable verdicts excluded and counted) and a standalone 1–5 rubric per answer.

Public surface: ``run_pairwise``, ``load_pairwise_results``, ``PairwiseResults``, and the versioned questions in
``harnessfit.eval.pairwise.judge``.
"""

from harnessfit.eval.pairwise.results import PairwiseResults, load_pairwise_results
from harnessfit.eval.pairwise.run import run_pairwise

__all__ = ["PairwiseResults", "load_pairwise_results", "run_pairwise"]
