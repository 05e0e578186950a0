"""Run a command contained: in the eval sandbox (``eval/sandbox.py``) or, unsandboxed, under the subreaper
supervisor, with its output, wall-clock time and resource caps watched (``run_contained``), and the isolated
environment a checker runs in (``checker_env``). The episode runner (``eval/runner.py``) and the Harbor verifier use
these.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from harnessfit.eval.caps import CapWatch
from harnessfit.eval.sandbox import SandboxSpec, supervised

__all__ = ["run_contained", "checker_env", "host_path_without"]


class _Capture:
    """Reads one pipe to EOF, stores selected lines, and shares a byte budget with its sibling."""

    def __init__(self, budget: _Budget, sink: Path, skip: tuple[bytes, ...] = ()) -> None:
        self.budget, self.sink, self.skip = budget, sink, skip

    def pump(self, pipe) -> None:
        with self.sink.open("wb") as out:
            for line in iter(pipe.readline, b""):
                self.budget.spend(len(line))
                if self.budget.exceeded:
                    continue  # keep draining so the child never blocks; the runner is killing it
                if self.skip and line.startswith(self.skip):
                    continue
                out.write(line)


class _Budget:
    def __init__(self, limit: int) -> None:
        self.limit, self.used, self.exceeded = limit, 0, False
        self._lock = threading.Lock()
        self.hit = threading.Event()

    def spend(self, n: int) -> None:
        with self._lock:
            self.used += n
            if self.used > self.limit and not self.exceeded:
                self.exceeded = True
                self.hit.set()


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(proc: subprocess.Popen, *, block: bool = False) -> float | None:
    """Wait for ``proc`` (``wait4``: its rusage counts every descendant it or they reaped, i.e. the whole sandbox);
    returns the CPU seconds once it ended, None while it runs."""
    if proc.returncode is not None:
        return 0.0
    pid, status, usage = os.wait4(proc.pid, 0 if block else os.WNOHANG)
    if pid == 0:
        return None
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def _stop(proc: subprocess.Popen) -> float | None:
    """SIGTERM first (the supervisor then kills the whole tree; bwrap dies and its namespace with it), SIGKILL to
    the process group after a grace period; returns the CPU seconds of ``_reap``."""
    if proc.returncode is None:
        os.kill(proc.pid, signal.SIGTERM)  # not proc.terminate(): its poll() would reap without the rusage
    deadline = time.monotonic() + 10
    while (cpu := _reap(proc)) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    _kill_group(proc)
    return cpu if cpu is not None else _reap(proc, block=True)


def _run_capped(
    cmd: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    max_seconds: float,
    max_bytes: int,
    stdout_file: Path,
    stderr_file: Path,
    watch: CapWatch | None = None,
    skip_lines: tuple[bytes, ...] = (),
) -> tuple[int | None, str | None, int, float]:
    """Run ``cmd`` in its own session; returns (exit code, kill reason, output bytes, wall seconds). With
    ``watch`` its resource caps are watched too (kill reason ``"cap"``, the hit in ``watch.hit``); stdout lines that
    start with one of ``skip_lines`` are counted but not stored.

    Its stdout and stderr are unix sockets (socketpairs), not pipes: a pipe can be reopened for writing through
    ``/proc/<pid>/fd/1`` by any process of the same user (the agent's bash, or the harness's own ``write`` tool as
    ``/proc/self/fd/1``), which would let the agent add events to the stream it is scored from; a socket cannot be
    opened that way (ENXIO)."""
    budget = _Budget(max_bytes)
    start = time.monotonic()
    gated = watch is not None and watch.gated
    (out_r, out_w), (err_r, err_w) = socket.socketpair(), socket.socketpair()
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if gated else subprocess.DEVNULL,
            stdout=out_w.fileno(),
            stderr=err_w.fileno(),
            start_new_session=True,
        )
    finally:
        out_w.close()
        err_w.close()
    readers = [out_r.makefile("rb"), err_r.makefile("rb")]
    threads = [
        threading.Thread(target=_Capture(budget, stdout_file, skip_lines).pump, args=(readers[0],), daemon=True),
        threading.Thread(target=_Capture(budget, stderr_file).pump, args=(readers[1],), daemon=True),
    ]
    for t in threads:
        t.start()
    killed: str | None = None
    deadline = start + max_seconds
    try:
        if watch is not None:
            watch.attach(proc)
        while (cpu := _reap(proc)) is None:
            if budget.hit.wait(timeout=0.05):
                killed = "output_cap"
            elif time.monotonic() > deadline:
                killed = "wall_clock"
            elif watch is not None and watch.check(proc.pid):
                killed = "cap"
            if killed:
                cpu = _stop(proc)
                break
    except BaseException:
        _stop(proc)
        raise
    code = None if killed else proc.returncode  # the exit code only of a command that ended on its own
    _kill_group(proc)  # anything left in the group
    if watch is not None and watch.finish(cpu) is not None:
        killed = "cap"  # seen after the end too: the CPU time of the whole tree, a full mount, a file at the cap
    for t in threads:
        t.join(timeout=10)
    for reader in readers:
        reader.close()
    out_r.close()
    err_r.close()
    return code, killed, budget.used, time.monotonic() - start


def checker_env(home: str, path: str) -> dict[str, str]:
    """The environment a checker runs in: a fresh (empty) HOME, so no ``usercustomize.py`` or ``.pth`` the agent
    planted in its HOME is there; a PATH of system folders only; no PYTHON* variable of the host. The checker's
    own interpreter is isolated by its command (``python3 -I``, which the task loader requires), and every other
    Python the checker starts (from a shell script, through a wrapper) by ``PYTHONSAFEPATH``: no script folder or
    working folder goes first on ``sys.path`` (Python >= 3.11), so a planted ``subprocess.py`` or ``json.py``
    cannot stand in for the standard library; a checker that needs the code under test appends the workspace to
    ``sys.path`` itself, after the standard library."""
    env = {
        "HOME": home,
        "PATH": path,
        "PYTHONNOUSERSITE": "1",
        "PYTHONSAFEPATH": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "NO_COLOR": "1",
        "TMPDIR": "/tmp",
    }
    for key in ("LANG", "LC_ALL", "TZ"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def host_path_without(*folders: Path) -> str:
    keep = []
    for entry in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        if any(Path(entry).resolve().is_relative_to(f.resolve()) for f in folders):
            continue
        keep.append(entry)
    return os.pathsep.join(keep)


def run_contained(
    cmd: Sequence[str],
    *,
    spec: SandboxSpec | None,
    cwd: Path,
    cwd_inside: str | None = None,
    env: dict[str, str],
    etc_dir: Path,
    max_seconds: float,
    max_bytes: int,
    stdout_file: Path,
    stderr_file: Path,
    watch: CapWatch | None = None,
    skip_lines: tuple[bytes, ...] = (),
) -> tuple[int | None, str | None, int, float]:
    """Run ``cmd`` in the sandbox ``spec`` (working folder ``cwd_inside``, default ``cwd``'s own path) or, with
    ``spec=None``, unsandboxed under the subreaper supervisor; caps as ``_run_capped``."""
    if spec is not None:
        full = spec.command(cmd, cwd=cwd_inside or str(cwd.resolve()), etc_dir=etc_dir)
    else:
        full = supervised(cmd)
    return _run_capped(
        full,
        cwd=cwd,
        env=env,
        max_seconds=max_seconds,
        max_bytes=max_bytes,
        stdout_file=stdout_file,
        stderr_file=stderr_file,
        watch=watch,
        skip_lines=skip_lines,
    )
