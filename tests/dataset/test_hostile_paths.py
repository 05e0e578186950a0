"""Odd paths give one-line errors or true ledger rows, never tracebacks: a symlinked trace whose target lies outside
the input folder, symlink loops (as the input and inside a folder), dangling links, a file nobody may read (mode
000), and rich markup (``[/x]``) in a path, including in the summary printed after a dataset was written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_real_traces import _pi_head

from harnessfit.convert import convert
from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.harness.card import load_card


@pytest.fixture(scope="module")
def card():
    return load_card("pi", "0.73.1")


def _ledger(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "ledger.jsonl").read_text().splitlines()]


def _main(argv: list[str], capsys) -> tuple[int, str, str]:
    """Run the CLI entry point in this process: (exit code, stdout, stderr)."""
    from harnessfit.cli import main

    old = sys.argv
    sys.argv = ["harnessfit", *argv]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = old
    out, err = capsys.readouterr()
    return code, out, err


def test_a_symlinked_trace_whose_target_is_outside_the_input_folder_is_read(tmp_path, traces_dir, card):
    target = _pi_head(traces_dir, tmp_path / "elsewhere" / "s.jsonl")
    work = tmp_path / "work"
    (work / "in").mkdir(parents=True)
    (work / "in" / "linked.jsonl").symlink_to(target)  # outside work/, the parent labels are relative to
    summary = convert([work / "in"], tmp_path / "conv", card)
    assert summary.accepted == 1
    conv = json.loads((tmp_path / "conv" / "conversations.jsonl").read_text().splitlines()[0])
    assert conv["meta"]["file"] == "in/linked.jsonl"  # named where the link is, not where it points
    rep = build_dataset(config_from_values(inputs=[str(work / "in")], parquet=False), tmp_path, out=tmp_path / "ds")
    assert rep.manifest["counts"]["kept"] == 1


def test_a_symlink_loop_as_the_input_is_one_line(tmp_path, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for cmd in (
        ["build", "--inputs", str(loop), "--out", str(tmp_path / "ds")],
        ["convert", str(loop), "--out", str(tmp_path / "conv")],
    ):
        code, _, err = _main(cmd, capsys)
        assert code == 2 and "symbolic link" in err and "Traceback" not in err, err
        assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1, err


def test_loops_and_dangling_links_inside_a_folder_get_ledger_rows(tmp_path, traces_dir, card):
    _pi_head(traces_dir, tmp_path / "in" / "good.jsonl")
    (tmp_path / "in" / "dangling.jsonl").symlink_to(tmp_path / "in" / "gone.jsonl")
    (tmp_path / "in" / "loop.jsonl").symlink_to(tmp_path / "in" / "loop.jsonl")
    summary = convert([tmp_path / "in"], tmp_path / "conv", card)
    rows = {r["file"]: r for r in _ledger(tmp_path / "conv")}
    assert summary.accepted == 1 and summary.read == 3
    assert "target does not exist" in rows["in/dangling.jsonl"]["detail"]
    assert "symbolic links" in rows["in/loop.jsonl"]["detail"]
    rep = build_dataset(config_from_values(inputs=[str(tmp_path / "in")], parquet=False), tmp_path, out=tmp_path / "ds")
    rows = {r["file"]: r for r in _ledger(tmp_path / "ds")}
    assert rep.manifest["counts"]["kept"] == 1 and {"in/dangling.jsonl", "in/loop.jsonl"} <= rows.keys()


@pytest.mark.parametrize("where", ["input", "out"])
def test_rich_markup_in_a_path_is_printed_as_written(tmp_path, traces_dir, capsys, where):
    src = _pi_head(traces_dir, tmp_path / "in" / "s.jsonl")
    if where == "input":  # an error message naming the path
        bad = tmp_path / "in[/bold]" / "x.jsonl"
        code, _, err = _main(["build", "--inputs", str(bad), "--out", str(tmp_path / "ds")], capsys)
        assert code == 2 and "in[/bold]" in err and "Traceback" not in err, err
        code, _, err = _main(["convert", str(bad), "--out", str(tmp_path / "conv")], capsys)
        assert code == 2 and "in[/bold]" in err, err
        return
    # the summary after a complete build names it whole, on one line, however long (wider than any terminal)
    out = tmp_path / ("x" * 120) / "ds[/red]"
    code, stdout, err = _main(["build", "--inputs", str(src), "--out", str(out), "--no-parquet"], capsys)
    assert code == 0 and (out / "manifest.json").is_file(), err
    assert f"dataset → {out}" in stdout.splitlines(), stdout
    conv = tmp_path / ("y" * 120) / "c[/b]"
    code, stdout, err = _main(["convert", str(src), "--out", str(conv)], capsys)
    assert code == 0, err
    assert any(line.startswith(f"convert → {conv}  (card ") for line in stdout.splitlines()), stdout


def _unprivileged() -> list[str]:
    """A command prefix under which a mode-000 file cannot be read: none when not root; as root, setpriv without the
    capabilities that let root read anything (the file's owner, root, has no permission bits left)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip(
            "running as root without setpriv: a mode-000 file stays readable, so 'permission denied' "
            "cannot be produced here"
        )
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


def test_a_file_nobody_may_read_gets_a_permission_denied_row_in_convert_and_build(tmp_path, traces_dir):
    good = _pi_head(traces_dir, tmp_path / "in" / "good.jsonl")
    locked = tmp_path / "in" / "locked.jsonl"
    shutil.copy(good, locked)
    locked.chmod(0)
    prefix = _unprivileged()
    probe = subprocess.run([*prefix, sys.executable, "-c", f"open({str(locked)!r}).read()"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("this process can read a mode-000 file even without DAC capabilities")
    cli = [*prefix, sys.executable, "-c", "from harnessfit.cli import main; main()"]
    for cmd, out in (
        (["convert", str(tmp_path / "in"), "--out", str(tmp_path / "conv")], tmp_path / "conv"),
        (["build", "--inputs", str(tmp_path / "in"), "--out", str(tmp_path / "ds"), "--no-parquet"], tmp_path / "ds"),
    ):
        proc = subprocess.run([*cli, *cmd], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        rows = [r for r in _ledger(out) if r["file"] == "in/locked.jsonl"]
        assert len(rows) == 1 and "Permission denied" in rows[0]["detail"], rows
    m = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert m["counts"]["kept"] == 1
    assert [r["sha256"] for r in m["inputs"] if r["path"].endswith("locked.jsonl")] == [None]


def test_markup_in_trace_file_names_inside_the_input_folder(tmp_path, traces_dir, capsys):
    # a closing tag needs a slash, so it spans a folder and a file: in/[bold]x[ / ].jsonl reads "[bold]x[/].jsonl"
    _pi_head(traces_dir, tmp_path / "in" / "[bold]x[" / "].jsonl")
    (tmp_path / "in" / "[@click=x]bad.jsonl").write_text('{"x":\n')
    code, stdout, err = _main(["convert", str(tmp_path / "in"), "--out", str(tmp_path / "c[/]")], capsys)
    assert code == 0 and "Traceback" not in err, err
    labels = {r["file"] for r in _ledger(tmp_path / "c[/]")}
    assert "in/[@click=x]bad.jsonl" in labels
    code, stdout, err = _main(
        ["build", "--inputs", str(tmp_path / "in"), "--out", str(tmp_path / "d[/]"), "--no-parquet"], capsys
    )
    assert code == 0 and "d[/]" in stdout.replace("\n", ""), err
