"""The audit's closing lines name the output folder: a path holding rich markup (``[/]``) is printed as written,
never parsed as markup (a MarkupError after the audit was fully written)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from _helpers.sft import conversation_records, write_dataset
from harnessfit.cli import app


@pytest.mark.slow  # loads the embedded tokenizer (~15 s)
def test_an_output_path_with_markup_is_printed_as_written(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds", {"train": conversation_records(2)})
    out = tmp_path / "a[/]" / "b[/red]"
    res = CliRunner().invoke(app, ["audit", str(ds), "--model", "embedded", "--caps", "1024", "--out", str(out)])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code == 0, res.output
    assert (out / "audit.json").is_file()
    assert "b[/red]" in res.output.replace("\n", "")
