"""Resource caps in the eval sandbox (issue 27, item 2), through the real Pi: a scripted model whose one bash call
writes 1 GiB to /tmp, to $HOME or to the workspace, writes a file past the file size cap, forks past the process
cap or spins past the CPU cap is stopped by that cap, and the results name the failure. The caps are small task
fields here (64 MiB) so the tests stay fast; the defaults are the task's ``Limits``."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest
import yaml

from harnessfit.core.jsonio import dumps_compact_str
from harnessfit.eval.run import run_eval
from harnessfit.eval.sandbox import sandbox_status
from harnessfit.harness.scripted import Reply

pytestmark = [pytest.mark.pi, pytest.mark.slow]

MIB = 1 << 20
TASK = "create_hello_script"


def _suite(tmp_path: Path, default_suite: Path, **limits) -> Path:
    """A one-task suite whose task carries the given caps."""
    suite = tmp_path / "suite"
    shutil.copytree(default_suite / TASK, suite / TASK)
    spec = suite / TASK / "task.yaml"
    data = yaml.safe_load(spec.read_text())
    data["limits"] = {**(data.get("limits") or {}), **limits}
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    return suite


def _one_command(command: str):
    """A model that runs ``command`` with bash, then answers."""

    def respond(body: dict, index: int) -> Reply:
        if not any(m.get("role") == "assistant" for m in body.get("messages") or []):
            return Reply(tool_calls=[("bash", dumps_compact_str({"command": command}))])
        return Reply(text="Done.")

    return respond


def _run(suite: Path, out: Path, command: str):
    if sandbox_status() != "bwrap":
        pytest.skip(f"bubblewrap cannot run here: {sandbox_status()}")
    results = run_eval("scripted:caps", suite, out, responder=_one_command(command), progress=False)
    (ep,) = results.episodes
    assert ep.facts.status == "success", ep.facts.error
    return results, ep


def _largest_file(folder: Path) -> int:
    return max((p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()), default=0)


@pytest.mark.parametrize(("target", "label"), [("/tmp/big", "/tmp"), ("$HOME/big", "HOME"), ("big", "workspace")])
def test_writing_a_gibibyte_is_stopped_by_the_disk_cap(pi_installed, default_suite, tmp_path, target, label):
    suite = _suite(
        tmp_path, default_suite, max_tmp_bytes=64 * MIB, max_home_bytes=64 * MIB, max_workspace_bytes=64 * MIB
    )
    results, ep = _run(suite, tmp_path / "out", f"dd if=/dev/zero of={target} bs=1M count=1024; echo dd-exit $?")
    assert ep.facts.cap_hit == "cap_disk", (ep.facts.cap_detail, ep.facts.pi_exit_code)
    assert ep.facts.cap_detail.startswith(f"{label} full"), ep.facts.cap_detail
    assert ep.metrics.failure == "cap_disk" and not ep.metrics.complete_loop
    assert results.aggregates["failures"] == {"cap_disk": 1}
    policy = ep.facts.sandbox_policy["agent"]
    assert policy["caps"]["tmp_bytes"] == 64 * MIB and policy["caps"]["workspace_bytes"] == 64 * MIB
    # the run folder keeps no junk: the 64 MiB the agent left in its workspace is listed, not kept
    assert _largest_file(tmp_path / "out") < 2 * MIB
    if label == "workspace":
        assert any(p.startswith("big (") for p in ep.facts.pruned), ep.facts.pruned


def test_a_file_past_the_size_cap_is_cut_and_named(pi_installed, default_suite, tmp_path):
    suite = _suite(tmp_path, default_suite, max_file_bytes=8 * MIB, max_workspace_bytes=64 * MIB)
    _, ep = _run(suite, tmp_path / "out", "dd if=/dev/zero of=big bs=1M count=256; echo dd-exit $?")
    assert ep.facts.cap_hit == "cap_fsize", (ep.facts.cap_detail, ep.facts.pi_exit_code)
    assert "workspace/big" in ep.facts.cap_detail
    assert ep.metrics.failure == "cap_fsize"
    events = (tmp_path / "out" / ep.facts.events_file).read_text()
    assert "File size limit exceeded" in events  # what bash said of dd (SIGXFSZ); the verdict is the runner's


def test_forking_past_the_process_cap_is_stopped(pi_installed, default_suite, tmp_path):
    """The stop is the sandbox's end: none of the ``sleep`` processes the forking agent started outlives it."""
    marker = f"3118.{uuid.uuid4().int % 10**6:06d}"
    suite = _suite(tmp_path, default_suite, max_processes=64, max_seconds=60)
    _, ep = _run(suite, tmp_path / "out", f"for i in $(seq 200); do sleep {marker} & done; wait")
    assert ep.facts.cap_hit == "cap_pids", (ep.facts.cap_detail, ep.facts.killed)
    assert ep.metrics.failure == "cap_pids" and ep.facts.wall_seconds < 50
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                alive.append(pid)
        except OSError:
            pass
    assert alive == []


def test_spinning_past_the_cpu_cap_is_stopped(pi_installed, default_suite, tmp_path):
    suite = _suite(tmp_path, default_suite, max_cpu_seconds=4, max_seconds=60)
    _, ep = _run(suite, tmp_path / "out", "timeout 50 sh -c 'while :; do :; done'")
    assert ep.facts.cap_hit == "cap_cpu", (ep.facts.cap_detail, ep.facts.killed)
    assert ep.metrics.failure == "cap_cpu" and ep.facts.wall_seconds < 30


def test_allocating_past_the_memory_cap_is_stopped(pi_installed, default_suite, tmp_path):
    """Pi and its launcher hold about 200 MiB; the agent's Python grows by 64 MiB steps towards 2 GiB."""
    suite = _suite(tmp_path, default_suite, max_memory_bytes=512 * MIB, max_seconds=60)
    grow = "import time\nkeep = []\nfor i in range(32):\n    keep.append(b'x' * (64 << 20))\n    time.sleep(0.05)\n"
    _, ep = _run(suite, tmp_path / "out", f'python3 -c "{grow}"; echo python-exit $?')
    assert ep.facts.cap_hit == "cap_memory", (ep.facts.cap_detail, ep.facts.killed)
    assert ep.metrics.failure == "cap_memory"
