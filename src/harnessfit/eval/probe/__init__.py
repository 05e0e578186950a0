"""Base-model probes: a model's raw behaviour under the harness's real system prompt and tools, before any
training — tool calls in the template's format, double-encoded and invalid arguments by the card's reason codes,
``<think>`` text, stopping at end-of-turn or at the cap, answering without a tool when one is needed.

Public surface: ``run_probe``, ``probe_with_compare``, ``compare_probes``, ``load_probes``, ``load_probe_results``,
``ProbeResults``.
"""

from harnessfit.eval.probe.probes import load_probes
from harnessfit.eval.probe.results import ProbeResults, compare_probes, load_probe_results
from harnessfit.eval.probe.run import probe_with_compare, run_probe

__all__ = ["ProbeResults", "compare_probes", "load_probe_results", "load_probes", "probe_with_compare", "run_probe"]
