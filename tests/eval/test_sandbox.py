"""A bash escape attempt (writing outside the workspace) fails under bubblewrap; without it, the same write lands."""

from __future__ import annotations

import os
import signal
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
    return run_eval(
        "scripted:escape",
        suite,
        out,
        responder=escape(*map(str, targets))(tasks),
        task_ids=["create_hello_script"],
        sandbox=sandbox,
        progress=False,
    )


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


def _sleeper_responder(marker: str):
    from harnessfit.core.jsonio import dumps_compact_str
    from harnessfit.harness.scripted import Reply

    def respond(body: dict, index: int) -> Reply:
        if not any(m.get("role") == "assistant" for m in body.get("messages") or []):
            cmd = f"setsid nohup sleep {marker} >/dev/null 2>&1 & echo started"
            return Reply(tool_calls=[("bash", dumps_compact_str({"command": cmd}))])
        return Reply(text="left a background child behind.")

    return respond


def _pids_running(marker: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                    found.append(int(pid))
            except OSError:
                pass
    return found


def test_no_sandbox_kills_the_agents_whole_session_tree(pi_installed, small_suite, tmp_path):
    """Item 3: without bubblewrap a ``setsid nohup`` child (a new session, outside Pi's process group) must not
    outlive the episode; the results say the sandbox was disabled."""
    marker = f"3118.{uuid.uuid4().int % 10**6:06d}"
    try:
        results = run_eval(
            "scripted:sleeper",
            small_suite,
            tmp_path / "open",
            responder=_sleeper_responder(marker),
            task_ids=["create_hello_script"],
            sandbox=False,
            progress=False,
        )
        (ep,) = results.episodes
        assert ep.facts.status == "success", ep.facts.error
        assert results.sandbox.startswith("none: disabled") and ep.facts.sandbox.startswith("none: disabled")
        assert _pids_running(marker) == []
    finally:
        for pid in _pids_running(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("broken", ["missing", "cannot_start"])
def test_sandbox_failure_never_runs_the_agent_unsandboxed(pi_installed, small_suite, tmp_path, monkeypatch, broken):
    """Item 3: with bubblewrap missing or failing to start, an eval that asked for the sandbox stops with a clear
    error naming --no-sandbox; no episode runs (nothing is written into the episodes folder)."""
    import shutil

    from harnessfit.errors import UserError
    from harnessfit.eval import sandbox as sandbox_mod

    real_which = shutil.which
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)

    def which(name, *args, **kwargs):
        if name == "bwrap":
            return None if broken == "missing" else str(fake)
        return real_which(name, *args, **kwargs)

    monkeypatch.setattr(shutil, "which", which)
    sandbox_mod.sandbox_status.cache_clear()
    try:
        with pytest.raises(UserError, match="--no-sandbox"):
            run_eval("scripted:golden", small_suite, tmp_path / "out", task_ids=["create_hello_script"], progress=False)
        assert not (tmp_path / "out" / "episodes").exists()
    finally:
        sandbox_mod.sandbox_status.cache_clear()
