"""report stage: Markdown/JSON tables of eval results (per model, and side by side before/after)."""

from harnessfit.report.tables import compare, compare_table

__all__ = ["compare", "compare_table"]
