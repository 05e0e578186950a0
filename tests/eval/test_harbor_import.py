"""``harnessfit tasks import harbor``: Harbor tasks that fit become task folders, checked in the sandbox; the
rest are listed with a reason (issue 29, item 4)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.eval.sandbox import sandbox_status
from harnessfit.eval.task import load_suite

DATA = Path(__file__).parent / "data" / "harbor"


def test_harbor_tasks_convert_where_they_fit(tmp_path):
    if sandbox_status() != "bwrap":
        pytest.skip(f"bubblewrap cannot run here: {sandbox_status()}")
    src = tmp_path / "src"
    for name in ("count-words", "outside-output", "both-rewards"):
        shutil.copytree(DATA / name, src / name)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["tasks", "import", "harbor", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "converted\tcount-words"
    assert "skipped\toutside-output\tit writes outside its working folder (/output)" in lines
    assert any(line.startswith("skipped\tboth-rewards\tits image pip-installs pytest==8.4.1") for line in lines)
    (task,) = load_suite(out)  # the project's own loader takes it
    assert task.id == "count-words" and task.prompt.startswith("Count the words of words.txt")  # canary dropped
    assert [c.path for c in task.expected_change] == ["count.txt"]
    assert task.checker.command == "python3 -I hf_check.py" and task.validation_command == ""
    assert "/app/" not in task.reference[0].args["command"] and "> count.txt" in task.reference[0].args["command"]
    check = (task.checker_dir / "hf_tests" / "check_count.py").read_text()
    assert 'Path("hf_logs/reward.json")' in check and 'Path("count.txt")' in check
    assert sorted(p.name for p in task.workspace_dir.iterdir()) == ["words.txt"]
    again = CliRunner().invoke(app, ["tasks", "import", "harbor", str(src), "--out", str(out)])
    assert again.exit_code != 0 and "not empty" in str(again.exception)


def test_unknown_import_format_is_one_line(tmp_path):
    res = CliRunner().invoke(app, ["tasks", "import", "swebench", str(tmp_path), "--out", str(tmp_path / "o")])
    assert res.exit_code != 0 and "unknown task format 'swebench'" in str(res.exception)
