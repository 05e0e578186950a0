"""Resource caps of one sandboxed command, and the runner's side of them: what stops an agent that fills memory or
disk, forks without end or spins the CPU, and how each hit is told apart from the outside.

The caps (``Caps``, from a task's ``Limits``):

- every tmpfs is sized (bubblewrap's ``--size``): ``/tmp``, HOME, ``/dev/shm`` (``/dev`` itself read-only), and
  the *captured* folders — the workspace and Pi's session folder are each a sized tmpfs inside the sandbox, seeded
  from the host by the launcher and copied out by the runner after the sandbox ended, so nothing the agent writes
  lands on the host disk during the episode;
- ``RLIMIT_FSIZE`` (largest file), ``RLIMIT_NPROC`` (processes and threads) and ``RLIMIT_CPU`` (a backstop per
  process), set by a tiny wrapper inside the sandbox after bubblewrap made its user namespace: from Linux 5.14 the
  process count is kept per user namespace, so it counts the sandbox's tasks, not the user's on the host;
- the CPU seconds and the resident memory of the whole process tree together, and its number of tasks, watched
  by the runner (run as root, the kernel exempts the sandbox from ``RLIMIT_NPROC``: then the runner's watch is
  the process cap).

``CapWatch`` is the runner's half. Before the agent starts (the launcher waits for a ``go`` line on its stdin) it
opens each sized tmpfs of the sandbox through ``/proc/<pid>/root`` and keeps the folder descriptors: they pin the
mounts past the sandbox's end, so the runner reads the workspace as the agent left it, after every process in
the sandbox is dead. While the command runs it polls ``fstatvfs`` of those mounts (a full one is ``cap_disk``) and
the process tree under bubblewrap (tasks at the limit are ``cap_pids``, CPU seconds past it ``cap_cpu``, resident
memory past it ``cap_memory``), and stops the sandbox on a hit. Afterwards the exit rusage gives the tree's exact
CPU time, and a regular file at the size limit (the kernel cuts a write there) is the evidence of ``cap_fsize``.
All of this is kernel state the runner reads itself, never text the agent printed.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harnessfit.eval.episode import EpisodeFacts
from harnessfit.eval.task import Limits

__all__ = [
    "CAP_FAILURES",
    "KEEP_FILE_BYTES",
    "SHM_BYTES",
    "CapWatch",
    "Caps",
    "check_seed_fits",
    "collect",
    "copy_out",
    "prune_large_files",
    "tree_usage",
]

CAP_FAILURES = ("cap_disk", "cap_fsize", "cap_pids", "cap_cpu", "cap_memory")
SHM_BYTES = 64 << 20  # /dev/shm inside the sandbox
KEEP_FILE_BYTES = 1 << 20  # after the checker, larger workspace files are removed from the run folder (listed)
_MAX_DEPTH, _MAX_ENTRIES = 64, 100_000  # how far the runner walks a captured tmpfs
_SCAN_EVERY = 0.1  # seconds between scans of the process tree
_TICK, _PAGE = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")

# Run inside the sandbox as its first command: the limits, then exec the launcher (isolated, no site: fast).
_RLIMIT_PY = (
    "import os, resource as r, sys\n"
    "f, n, c = map(int, sys.argv[1:4])\n"
    "r.setrlimit(r.RLIMIT_FSIZE, (f, f)); r.setrlimit(r.RLIMIT_NPROC, (n, n)); r.setrlimit(r.RLIMIT_CPU, (c, c + 5))\n"
    "os.execvp(sys.argv[4], sys.argv[4:])\n"
)


@dataclass(frozen=True)
class Caps:
    """The resource caps of one sandbox (sizes in bytes); defaults are those of ``Limits``."""

    workspace_bytes: int = Limits().max_workspace_bytes
    tmp_bytes: int = Limits().max_tmp_bytes
    home_bytes: int = Limits().max_home_bytes
    shm_bytes: int = SHM_BYTES
    file_bytes: int = Limits().max_file_bytes
    processes: int = Limits().max_processes
    cpu_seconds: float = 2 * Limits().max_seconds
    memory_bytes: int = Limits().max_memory_bytes

    @classmethod
    def from_limits(cls, limits: Limits) -> Caps:
        return cls(
            workspace_bytes=limits.max_workspace_bytes,
            tmp_bytes=limits.max_tmp_bytes,
            home_bytes=limits.max_home_bytes,
            file_bytes=limits.max_file_bytes,
            processes=limits.max_processes,
            cpu_seconds=limits.max_cpu_seconds or 2 * limits.max_seconds,
            memory_bytes=limits.max_memory_bytes,
        )

    def wrap(self, cmd: Sequence[str], python: str) -> list[str]:
        """``cmd`` under the rlimits, run by ``python`` (a python3 the sandbox sees)."""
        return [
            python,
            "-I",
            "-S",
            "-c",
            _RLIMIT_PY,
            str(self.file_bytes),
            str(self.processes),
            str(max(1, int(self.cpu_seconds + 0.999))),
            *cmd,
        ]

    def describe(self) -> dict[str, Any]:
        return asdict(self)


def _fstat_full(fd: int) -> bool:
    st = os.fstatvfs(fd)
    return st.f_bavail == 0 or st.f_favail == 0


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process not yet exited (a zombie has: a PID namespace's init becomes one only after
    every other process of its namespace is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def _proc_table() -> dict[int, list[tuple[int, int, float, int]]]:
    """ppid -> [(pid, threads, CPU seconds with its reaped children, resident bytes)] of every host process."""
    table: dict[int, list[tuple[int, int, float, int]]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                f = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        cpu = sum(int(x) for x in f[11:15]) / _TICK  # utime, stime, cutime, cstime
        table.setdefault(int(f[1]), []).append((int(name), max(1, int(f[17])), cpu, int(f[21]) * _PAGE))
    return table


def tree_usage(root: int) -> tuple[int, float, int]:
    """(tasks, CPU seconds, resident bytes) of every process below ``root`` (not ``root`` itself): threads count,
    as the kernel's ``RLIMIT_NPROC`` counts them; pages shared between processes count once per process."""
    table = _proc_table()
    tasks, cpu, rss, todo = 0, 0.0, 0, [root]
    while todo:
        for pid, threads, seconds, resident in table.get(todo.pop(), []):
            tasks, cpu, rss = tasks + threads, cpu + seconds, rss + resident
            todo.append(pid)
    return tasks, cpu, rss


def _walk(fd: int, visit: Callable[[str, int, os.stat_result, int], bool]) -> list[str]:
    """Walk the folder ``fd`` without following any link, calling ``visit(rel, dir_fd, lstat, depth)`` per entry
    (a folder is entered when it returns True); returns what was left out (too deep, too many entries)."""
    skipped: list[str] = []
    count = 0
    stack: list[tuple[int, str, int]] = [(os.dup(fd), "", 0)]
    try:
        while stack:
            dfd, base, depth = stack.pop()
            try:
                for name in sorted(os.listdir(dfd)):
                    rel = f"{base}{name}"
                    count += 1
                    if count > _MAX_ENTRIES:
                        skipped.append(f"{base}… (over {_MAX_ENTRIES} entries)")
                        return skipped
                    try:
                        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                        if not (visit(rel, dfd, st, depth) and stat.S_ISDIR(st.st_mode)):
                            continue
                        if depth + 1 >= _MAX_DEPTH:
                            skipped.append(f"{rel}/ (deeper than {_MAX_DEPTH})")
                            continue
                        sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
                    except OSError as exc:  # unreadable, or swapped for a link: left out, never followed
                        skipped.append(f"{rel} ({exc.strerror})")
                        continue
                    stack.append((sub, rel + "/", depth + 1))
            finally:
                os.close(dfd)
    finally:
        for dfd, _, _ in stack:
            os.close(dfd)
    return skipped


def _copy_file(name: str, dir_fd: int, dest: Path, mode: int) -> None:
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode & 0o777 | 0o600)
        try:
            while os.sendfile(out, src, None, 1 << 20) > 0:
                pass
        finally:
            os.close(out)
    finally:
        os.close(src)


def copy_out(fd: int, dest: Path, budget: int) -> list[str]:
    """Copy the folder ``fd`` (a captured tmpfs, its sandbox ended) into the empty host folder ``dest``: folders,
    regular files and links (as links), nothing followed; at most ``budget`` bytes of file content (hard links and
    sparse files could make the apparent sizes exceed the tmpfs). Returns what was left out."""
    left: list[str] = []
    used = 0

    def visit(rel: str, dir_fd: int, st: os.stat_result, depth: int) -> bool:
        nonlocal used
        target = dest / rel
        name = rel.rsplit("/", 1)[-1]
        if stat.S_ISDIR(st.st_mode):
            target.mkdir(mode=0o755)
            return True
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(name, dir_fd=dir_fd), target)
        elif stat.S_ISREG(st.st_mode) and used + st.st_size <= budget:
            used += st.st_size
            _copy_file(name, dir_fd, target, st.st_mode)
        else:
            left.append(
                rel
                + (
                    " (not a file, folder or link)"
                    if not stat.S_ISREG(st.st_mode)
                    else f" ({st.st_size} bytes, past the copy budget)"
                )
            )
        return False

    dest.mkdir(parents=True, exist_ok=True)
    return _walk(fd, visit) + left


def prune_large_files(root: Path, keep_bytes: int = KEEP_FILE_BYTES) -> list[str]:
    """Remove regular files over ``keep_bytes`` under ``root`` (a copied-out workspace, checked already); returns
    ``"path (N bytes)"`` for each. Links are not followed."""
    removed: list[str] = []
    for base, _dirs, files in os.walk(root, followlinks=False):
        for name in sorted(files):
            path = Path(base) / name
            st = path.lstat()
            if stat.S_ISREG(st.st_mode) and st.st_size > keep_bytes:
                path.unlink()
                removed.append(f"{path.relative_to(root).as_posix()} ({st.st_size} bytes)")
    return removed


class CapWatch:
    """The runner's view of one contained command's caps: held tmpfs mounts, the process tree, the first cap hit.

    ``mounts`` maps a label (``workspace``, ``/tmp`` …) to the path of a sized tmpfs inside the sandbox; ``probe``
    is a host file and where it is inside (the launcher), present once the sandbox's own root is in place.
    """

    def __init__(self, caps: Caps, mounts: dict[str, str] | None = None, probe: tuple[Path, str] | None = None):
        self.caps, self.mounts, self.probe = caps, dict(mounts or {}), probe
        self.fds: dict[str, int] = {}
        self.hit: tuple[str, str] | None = None
        self.cpu_seconds = 0.0
        self.peak_tasks = self.peak_memory = 0
        self._next_scan = 0.0
        self._pid: int | None = None  # the sandbox's first process (its PID namespace's init), host view

    @property
    def gated(self) -> bool:
        """Whether the command waits for ``go`` on stdin (only a sandbox with mounts to hold)."""
        return bool(self.mounts)

    def _sandbox_pid(self, outer: int) -> int | None:
        for pid, *_ in _proc_table().get(outer, []):
            inside = f"/proc/{pid}/root{self.probe[1]}" if self.probe else None
            try:
                if inside is None or os.path.samestat(os.stat(inside), os.stat(self.probe[0])):
                    return pid
            except OSError:
                continue
        return None

    def attach(self, proc: subprocess.Popen, timeout: float = 30.0) -> None:
        """Open every sized tmpfs of the started sandbox (through ``/proc/<pid>/root``), then let it go on."""
        if not self.gated:
            return
        deadline = time.monotonic() + timeout
        pid = None
        while pid is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the sandbox did not come up (bwrap exited or took over 30 s)")
            pid = self._sandbox_pid(proc.pid)
            if pid is None:
                time.sleep(0.005)
        for label, inside in self.mounts.items():
            self.fds[label] = os.open(f"/proc/{pid}/root{inside}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._pid = pid
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.close()

    def _stop_with(self, name: str, detail: str) -> bool:
        if self.hit is None:
            self.hit = (name, detail)
        return True

    def check(self, outer: int) -> bool:
        """Live caps; True (and ``hit`` set) when one was reached and the command must stop."""
        for label, fd in self.fds.items():
            if _fstat_full(fd):
                return self._stop_with("cap_disk", f"{label} full ({self._size_of(label)} bytes)")
        now = time.monotonic()
        if now < self._next_scan:
            return False
        self._next_scan = now + _SCAN_EVERY
        tasks, cpu, rss = tree_usage(outer)
        self.peak_tasks, self.cpu_seconds = max(self.peak_tasks, tasks), max(self.cpu_seconds, cpu)
        self.peak_memory = max(self.peak_memory, rss)
        if tasks >= self.caps.processes - 1:
            return self._stop_with("cap_pids", f"{tasks} processes and threads (cap {self.caps.processes})")
        if cpu >= self.caps.cpu_seconds:
            return self._stop_with("cap_cpu", f"{cpu:.1f} CPU seconds (cap {self.caps.cpu_seconds:g})")
        if rss >= self.caps.memory_bytes:
            return self._stop_with("cap_memory", f"{rss} bytes resident (cap {self.caps.memory_bytes})")
        return False

    def _size_of(self, label: str) -> int:
        st = os.fstatvfs(self.fds[label])
        return st.f_blocks * st.f_frsize

    def finish(self, cpu_seconds: float | None) -> tuple[str, str] | None:
        """After the command ended: the tree's exact CPU time (its exit rusage), full mounts, a file at the size
        limit; returns the first cap hit, or None. Waits (up to 5 s) until the sandbox's init is gone: its PID
        namespace has then no process left that could still write into a held mount."""
        deadline = time.monotonic() + 5
        while self._pid is not None and _running(self._pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        if cpu_seconds is not None:
            self.cpu_seconds = max(self.cpu_seconds, cpu_seconds)
        if self.cpu_seconds >= self.caps.cpu_seconds:
            self._stop_with("cap_cpu", f"{self.cpu_seconds:.1f} CPU seconds (cap {self.caps.cpu_seconds:g})")
        for label, fd in self.fds.items():
            if _fstat_full(fd):
                self._stop_with("cap_disk", f"{label} full ({self._size_of(label)} bytes)")
        if self.hit is None:
            self._find_file_at_limit()
        return self.hit

    def _find_file_at_limit(self) -> None:
        found: list[str] = []

        def visit(rel: str, _fd: int, st: os.stat_result, _depth: int) -> bool:
            if stat.S_ISREG(st.st_mode) and st.st_size >= self.caps.file_bytes:
                found.append(rel)
            return not found

        for label, fd in self.fds.items():
            _walk(fd, visit)
            if found:
                self._stop_with(
                    "cap_fsize", f"{label}/{found[0]} reached the file size cap ({self.caps.file_bytes} bytes)"
                )
                return

    def copy_out(self, label: str, dest: Path, budget: int) -> list[str]:
        return copy_out(self.fds[label], dest, budget)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


def check_seed_fits(seed: Path, caps: Caps) -> None:
    """The task's own files must leave room in the workspace cap (else it is the task's fault, not the agent's)."""
    size = sum(p.lstat().st_size for p in seed.rglob("*"))
    if size > caps.workspace_bytes * 0.9:
        raise ValueError(
            f"the task's workspace files ({size} bytes) do not fit in 90% of its workspace cap "
            f"(max_workspace_bytes {caps.workspace_bytes})"
        )


def collect(watch: CapWatch, workspace: Path, sessions: Path, facts: EpisodeFacts) -> None:
    """The cap hit, and the captured workspace and session folder copied out of the ended sandbox."""
    if watch.hit is not None:
        facts.cap_hit, facts.cap_detail = watch.hit  # type: ignore[assignment]
    for label, dest in (("workspace", workspace), ("sessions", sessions)):
        if label in watch.fds:
            left = watch.copy_out(label, dest, watch.caps.workspace_bytes)
            facts.pruned += [f"{label}/{x} (not copied out)" for x in left]
    shutil.rmtree(workspace.parent / "runner" / "workspace", ignore_errors=True)
