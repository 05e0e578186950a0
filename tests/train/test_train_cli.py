"""The train commands' command line: --help comes from the config fields' metadata (TRL's parser), flags after the
recipe are fields, and mistakes are one `error:` line with exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent / "harnessfit"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # CLI subprocesses import the whole stack
def test_grpo_help_and_one_line_errors(tmp_path) -> None:
    helped = _run("train", "grpo", "--help")
    assert helped.returncode == 0, helped.stderr
    for flag in ("--num_generations", "--rewards", "--judge", "--sft_adapter", "--beta", "--audit_dir", "--guard"):
        assert flag in helped.stdout, flag
    assert "published: 0.01" in helped.stdout  # our metadata, not only TRL's

    recipe = tmp_path / "r.yaml"
    recipe.write_text("num_generatons: 4\n")
    bad = _run("train", "grpo", str(recipe), "--out", str(tmp_path / "run"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    (line,) = [x for x in bad.stderr.splitlines() if x.startswith("error:")]
    assert "unknown recipe key 'num_generatons'" in line and "did you mean 'num_generations'" in line

    recipe.write_text("num_generations: 4\n")
    flag = _run("train", "grpo", str(recipe), "--out", str(tmp_path / "run"), "--temperature", "0")
    assert flag.returncode == 2 and "Traceback" not in flag.stderr
    assert "set temperature > 0" in flag.stderr.strip().splitlines()[-1]


def test_a_run_the_guard_stopped_ends_as_one_line_with_exit_code_3() -> None:
    from types import SimpleNamespace

    import pytest

    from harnessfit.errors import UserError
    from harnessfit.train.commands import _stop_if_stopped
    from harnessfit.train.run import STOPPED_EXIT_CODE

    _stop_if_stopped(SimpleNamespace(status="completed"))  # a finished run passes
    stopped = SimpleNamespace(
        status="stopped",
        global_step=7,
        stop_reason="host memory 0.1 GiB < 0.5 GiB",
        checkpoint_dir="out/train/checkpoints/checkpoint-6",
    )
    with pytest.raises(UserError) as err:
        _stop_if_stopped(stopped)
    assert err.value.exit_code == STOPPED_EXIT_CODE == 3
    assert str(err.value) == (
        "training stopped by the health guard at step 7: host memory 0.1 GiB < 0.5 GiB; "
        "checkpoint out/train/checkpoints/checkpoint-6; continue with --resume"
    )
