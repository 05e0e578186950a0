"""The demo report's raw/probe section: the side-by-side tables under their headings, and the pairwise summary
only when a judge ran."""

from __future__ import annotations

from pathlib import Path

from harnessfit.demo.raw_probes import report_section


def test_section_holds_tables_and_the_judged_summary(tmp_path: Path) -> None:
    (tmp_path / "raw.md").write_text("# Raw suite `s` side by side\n\n| Check | a | b |\n")
    (tmp_path / "probe.md").write_text("# Probes side by side\n\n| Figure | a | b |\n")
    tables = {"raw": {"s": str(tmp_path / "raw.md")}, "probe": str(tmp_path / "probe.md"), "pairwise": {}}
    text = "\n".join(report_section(tables))
    assert "### Raw suite `s`" in text and "### Probes side by side" in text and "pairwise" not in text.lower()
    tables["pairwise"] = {"s": "p/results.md"}
    tables["pairwise_outcomes"] = {"s": {"a": 1, "b": 2, "tie": 0, "order_sensitive": 3, "unparseable": 1}}
    text = "\n".join(report_section(tables))
    assert "stable A 1 / B 2 / tie 0, order-sensitive 3, unparseable 1" in text
