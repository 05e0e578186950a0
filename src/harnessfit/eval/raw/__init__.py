"""Raw one-shot suites: frozen prompts answered without tools, the code extracted by one documented rule
(``extract``), then checked by the language's real toolchain (``checkers``: Svelte 5 compiler + modern-Svelte
policy, Python ``py_compile`` + ruff), counted per answer and per suite with Wilson intervals.

Public surface: ``run_raw``, ``load_raw_suite``, ``load_raw_results``, ``compare_raw``, ``RawResults``, ``extract``,
``checker_for``, ``install_toolchains``.
"""

from harnessfit.eval.raw.checkers import checker_for
from harnessfit.eval.raw.extract import extract
from harnessfit.eval.raw.results import RawResults, compare_raw, load_raw_results
from harnessfit.eval.raw.run import run_raw
from harnessfit.eval.raw.suite import load_raw_suite
from harnessfit.eval.raw.toolchain import install_toolchains

__all__ = [
    "RawResults",
    "checker_for",
    "compare_raw",
    "extract",
    "install_toolchains",
    "load_raw_results",
    "load_raw_suite",
    "run_raw",
]
