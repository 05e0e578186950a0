"""A bash escape attempt (writing outside the workspace) fails under bubblewrap; without it, the same write lands."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from harnessfit.eval.run import run_eval
from harnessfit.eval.sandbox import sandbox_status
from harnessfit.eval.scripted_models import escape
from harnessfit.eval.task import load_suite

pytestmark = [pytest.mark.pi]


def _run(suite, out, *targets, sandbox: bool):
    tasks = load_suite(suite)
    return run_eval("scripted:escape", suite, out, responder=escape(*map(str, targets))(tasks),
                    task_ids=["create_hello_script"], sandbox=sandbox, progress=False)


def test_escape_blocked_by_sandbox(pi_installed, small_suite, tmp_path):
    if sandbox_status() != "bwrap":
        pytest.skip(f"bubblewrap cannot run here: {sandbox_status()}")
    in_tmp = tmp_path / "outside" / "escaped.txt"  # /tmp is private to the sandbox: the write vanishes
    # outside /tmp the root is read-only: the write fails
    in_root = Path.home() / ".cache" / f"harnessfit-escape-{uuid.uuid4().hex}.txt"
    try:
        results = _run(small_suite, tmp_path / "boxed", in_tmp, in_root, sandbox=True)
        assert results.sandbox == "bwrap"
        (ep,) = results.episodes
        assert ep.facts.status == "success" and ep.facts.sandbox == "bwrap"
        assert not in_tmp.exists() and not (tmp_path / "outside").exists()
        assert not in_root.exists()
        events = (tmp_path / "boxed" / ep.facts.events_file).read_text()
        assert "Read-only file system" in events
    finally:
        in_root.unlink(missing_ok=True)


def test_escape_succeeds_without_sandbox(pi_installed, small_suite, tmp_path):
    """Control: the same model really does write the file when no sandbox is used (so the test above can fail)."""
    target = tmp_path / "outside" / "escaped.txt"
    results = _run(small_suite, tmp_path / "open", target, sandbox=False)
    assert results.sandbox.startswith("none: ")
    assert target.read_text() == "escaped\n"
