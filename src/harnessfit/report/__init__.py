"""report stage: the static HTML report of a run (one section per stage, a page per eval episode; ``build_report``)
and the Markdown/JSON before/after tables of eval results (``compare``, made in eval/compare.py)."""

from harnessfit.eval.compare import compare, compare_table
from harnessfit.report.build import build_report

__all__ = ["compare", "compare_table", "build_report"]
