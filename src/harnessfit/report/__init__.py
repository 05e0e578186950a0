"""report stage: the static HTML report of a run (one section per stage, a page per eval episode; ``build_report``)
and the Markdown/JSON before/after tables of eval results (``compare``, made in eval/compare.py)."""

from harnessfit.eval.compare import compare, compare_table

__all__ = ["compare", "compare_table", "build_report"]


def __getattr__(name: str):
    if name == "build_report":  # imported on use: the tables stay cheap to import
        from harnessfit.report.build import build_report

        return build_report
    raise AttributeError(name)
