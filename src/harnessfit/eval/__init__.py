"""eval stage: task suites run through the real Pi CLI (sandboxed), scored per episode, aggregated with CIs.

Public surface for the demo and other stages:
``run_eval(model_or_endpoint, suite_dir, out_dir, seeds=…, workers=…) -> EvalResults``,
``Endpoint``, ``load_suite`` / ``load_task``, ``load_results``, and ``harnessfit.eval.compare.compare`` for the
before/after tables (also ``harnessfit.report.compare``).
"""

from harnessfit.eval.episode_runner import Endpoint
from harnessfit.eval.results import EvalResults, load_results
from harnessfit.eval.run import run_eval
from harnessfit.eval.task import Task, load_suite, load_task

__all__ = ["EvalResults", "Endpoint", "Task", "load_results", "load_suite", "load_task", "run_eval"]
