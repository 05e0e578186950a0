"""A newcomer's walk: the README's commands in order on ../shared/traces-extra ("our traces"), each run as a user
runs it in a terminal (rich's TTY_COMPATIBLE stands in for the terminal), each printing progress while it works and
the path of what it wrote."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "traces-extra"
EXE = str(Path(sys.executable).parent / "harnessfit")


def _run(cwd: Path, *args: str) -> str:
    env = {**os.environ, "TTY_COMPATIBLE": "1", "COLUMNS": "200"}
    proc = subprocess.run([EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, f"{args}: {proc.stderr[-3000:]}"
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", proc.stdout + proc.stderr)  # colours and cursor moves


@pytest.mark.slow
def test_the_readme_commands_print_progress_and_where_they_wrote(tmp_path: Path) -> None:
    if not TRACES.is_dir():
        pytest.fail(f"the shared traces are missing: {TRACES}")
    steps = [  # (command, what its progress shows, the output path it names)
        (["convert", str(TRACES), "--out", "out/convert"], "MB/s", "out/convert"),
        (["build", "--inputs", str(TRACES), "--out", "out/dataset"], "read → convert → redact → dedup", "out/dataset"),
        (
            ["audit", "out/dataset", "--model", "smollm2-135m", "--out", "out/audit"],
            "rendering + tokenizing",
            "out/audit",
        ),
        (
            [
                "train",
                "sft",
                str(REPO / "examples" / "recipes" / "smollm2-cpu-demo.yaml"),
                "--audit-dir",
                "out/audit",
                "--out",
                "out/train",
                "--max_steps",
                "1",
                "--max_train_records",
                "2",
                "--eval_strategy",
                "no",
                "--eval_on_start",
                "false",
                "--sources",
                "pi",
            ],
            "Training",
            "out/train/adapter",
        ),
    ]
    for args, progress, path in steps:
        text = _run(tmp_path, *args)
        assert progress in text, (args[0], text[-2000:])
        assert path in text, (args[0], text[-2000:])
        assert (tmp_path / path).exists()
    # the report of that run: the README's layout as one folder, and the stage folders given one by one
    for args, index in (
        (["report", "out"], "out/report/index.html"),
        (["report", "out/dataset", "out/audit", "out/train", "--out", "rep"], "rep/index.html"),
    ):
        text = _run(tmp_path, *args)
        assert index in text, text[-2000:]
        page = (tmp_path / index).read_text(encoding="utf-8")
        for key in ("funnel", "dataset", "audit", "train"):
            assert f'id="{key}"' in page, (args, key)
        assert ('id="convert"' in page) == (args[1] == "out")
        assert "tool calls that are labels" in page and "actions trained (seen at least once)" in page
