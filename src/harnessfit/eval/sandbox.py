"""Bubblewrap sandbox for eval episodes: the agent (and later the checker) sees only what it needs.

An agent under evaluation runs arbitrary bash as the user running the eval. Inside the sandbox it gets:

- the system folders read-only (``/usr`` and the ``/bin``, ``/lib`` … links or folders beside it, a short list of
  ``/etc`` entries the loader, Python, Node and TLS need — never ``/etc/shadow``, ``/etc/ssl/private``, npm or pip
  settings) plus synthetic ``/etc/passwd``, ``/etc/group``, ``/etc/hosts`` and ``/etc/nsswitch.conf``;
- Node's own install folder when it lives outside ``/usr`` (and Python's when the system has none), and the
  harness install that is used (read-only);
- read-write only what the caller names, and the *captured* folders (the episode's workspace and Pi's session
  folder): each a sized tmpfs the launcher seeds and the runner copies out after the sandbox ended;
- a fresh tmpfs ``HOME`` and ``/tmp`` and a ``/dev/shm``, each sized, a minimal read-only ``/dev``, its own
  ``/proc``; the root itself read-only; limits on file size, processes and CPU time (``eval/caps.py``);
- new user, IPC, PID, network, UTS (and cgroup, where possible) namespaces: no host process, no loopback service
  and no abstract unix socket of the host is reachable.

The model endpoint is the one way out: a forwarder inside the sandbox (``sandbox_programs/launch.mjs``, run by
Node, which Pi needs anyway) listens on the endpoint's own address inside the new network namespace and passes each
connection over a unix socket bound into the sandbox to a forwarder outside (``EndpointForwarder``, also Node), which
connects to the real endpoint. A hostname endpoint is mapped to 127.0.0.1 in the synthetic ``/etc/hosts``, so TLS to a
hosted API passes through end to end. ``SandboxSpec.describe()`` is what the results record as exactly what was allowed.

The sandbox fails closed: ``require_sandbox`` raises when bubblewrap is missing or cannot create the namespaces;
only an explicit ``--no-sandbox`` runs the agent without it (and the results say so).
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harnessfit.errors import UserError
from harnessfit.eval.caps import Caps

__all__ = [
    "sandbox_status",
    "require_sandbox",
    "SandboxSpec",
    "EndpointForwarder",
    "sandbox_path",
    "SANDBOX_HOME",
    "RUNNER_DIR",
    "UNSHARED",
]

SANDBOX_HOME = "/home/agent"  # HOME inside the sandbox: a fresh tmpfs each run
RUNNER_DIR = "/run/harnessfit"  # the runner's read-only files inside the sandbox (launcher, config seed)
UNSHARED = ("user", "ipc", "pid", "net", "uts", "cgroup")
_NS_FLAGS = [
    "--unshare-user",
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-uts",
    "--unshare-cgroup-try",
]
_SYSTEM_TOP = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
# /etc entries bound read-only when present: the dynamic loader, alternatives (awk, python …), time zone, TLS
# roots, Debian's Python site configuration, services/protocols for socket libraries, os-release.
_ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "timezone",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf",
    "python3",
    "python3.11",
    "python3.12",
    "python3.13",
    "protocols",
    "services",
    "os-release",
    "host.conf",
    "gai.conf",
    "mime.types",
)
_SYNTHETIC_ETC = {
    "passwd": f"root:x:0:0:root:{SANDBOX_HOME}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": "root:x:0:\nnogroup:x:65534:\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
    "hostname": "sandbox\n",
}
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _bwrap() -> str | None:
    return shutil.which("bwrap")


def _probe_args(exe: str) -> list[str]:
    return [
        exe,
        "--die-with-parent",
        *_NS_FLAGS,
        "--new-session",
        "--cap-drop",
        "ALL",
        *_system_binds(),
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        "1048576",
        "--tmpfs",
        "/tmp",
        "--remount-ro",
        "/",
        "true",
    ]


@functools.lru_cache(maxsize=1)
def sandbox_status() -> str:
    """``"bwrap"`` when the full sandbox (all namespaces, read-only root) starts here, else ``"none: <why>"``."""
    exe = _bwrap()
    if exe is None:
        return "none: bwrap not found on PATH (install the Debian package bubblewrap)"
    try:
        proc = subprocess.run(_probe_args(exe), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"none: bwrap probe failed ({exc})"
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        if "--size" in why:  # sized tmpfs (the caps) came with bubblewrap 0.7, and not in setuid mode
            why += "; the resource caps need bubblewrap 0.7 or later, not installed setuid"
        return f"none: bwrap cannot create a sandbox here ({why})"
    return "bwrap"


def require_sandbox() -> str:
    """The sandbox status, or a UserError when it cannot run: an eval never falls back to running unsandboxed."""
    status = sandbox_status()
    if status != "bwrap":
        raise UserError(
            f"the eval sandbox cannot run here ({status.removeprefix('none: ')}); fix bubblewrap, or "
            "pass --no-sandbox to run the agent unsandboxed (the results will say so)"
        )
    return status


@functools.lru_cache(maxsize=1)
def bwrap_version() -> str:
    exe = _bwrap()
    try:
        out = subprocess.run([exe or "bwrap", "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "bwrap"
    return out.strip() or "bwrap"


def _system_binds() -> list[str]:
    """bwrap arguments for the system folders: ``/usr`` read-only and each top-level link or folder beside it."""
    args: list[str] = []
    for name in _SYSTEM_TOP:
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    return args


def _tool_prefix(exe: str) -> Path | None:
    """The install folder of a tool found on PATH (its real binary's ``bin/..``) when it is not under ``/usr``."""
    found = shutil.which(exe)
    if found is None:
        return None
    real = Path(found).resolve()
    if real.is_relative_to("/usr") or any(real.is_relative_to(f"/{t}") for t in _SYSTEM_TOP):
        return None
    return real.parent.parent if real.parent.name == "bin" else real.parent


def tool_prefixes() -> list[Path]:
    """Install folders bound read-only beside the system folders: Node's when it lives outside ``/usr``, and this
    interpreter's base prefix when no ``python3`` is in the system folders (a pyenv-only machine)."""
    found = [p for p in [_tool_prefix("node")] if p is not None]
    if shutil.which("python3", path=SANDBOX_PATH) is None:
        base = Path(sys.base_prefix).resolve()
        if not base.is_relative_to("/usr"):
            found.append(base)
    return found


def sandbox_path() -> str:
    """PATH inside the sandbox: the system folders, then the ``bin`` of each of ``tool_prefixes``."""
    return ":".join([SANDBOX_PATH, *(str(p / "bin") for p in tool_prefixes())])


@dataclass
class SandboxSpec:
    """What one sandboxed command may see; ``command`` renders the bwrap call, ``describe`` the record of it.

    ``read_only``/``read_write`` bind host paths at the same path inside (or at ``dest`` when given as a pair);
    ``captured`` are (path inside, bytes) of sized tmpfs folders the runner holds and copies out (``CapWatch``);
    ``hosts`` are extra names mapped to 127.0.0.1; ``forward`` is (listen host, port, unix socket on the host,
    where it leads) when the model endpoint is reachable; ``caps`` size every tmpfs and set the rlimits.
    """

    read_write: list[Path | tuple[Path, str]] = field(default_factory=list)
    read_only: list[Path | tuple[Path, str]] = field(default_factory=list)
    runner_dir: Path | None = None  # host folder bound read-only at RUNNER_DIR
    hosts: list[str] = field(default_factory=list)
    forward: tuple[str, int, Path, str] | None = None
    captured: list[tuple[str, int]] = field(default_factory=list)
    caps: Caps = field(default_factory=Caps)

    @staticmethod
    def _pair(item: Path | tuple[Path, str]) -> tuple[str, str]:
        if isinstance(item, tuple):
            return str(Path(item[0]).resolve()), item[1]
        p = str(Path(item).resolve())
        return p, p

    def _etc_files(self, etc_dir: Path) -> list[str]:
        etc_dir.mkdir(parents=True, exist_ok=True)
        names = {"localhost", *self.hosts}
        files = dict(_SYNTHETIC_ETC, hosts="127.0.0.1 " + " ".join(sorted(names)) + "\n::1 ip6-localhost\n")
        args: list[str] = []
        for name, text in files.items():
            (etc_dir / name).write_text(text, encoding="utf-8")
            args += ["--ro-bind", str(etc_dir / name), f"/etc/{name}"]
        return args

    def command(self, cmd: Sequence[str], *, cwd: str, etc_dir: Path) -> list[str]:
        """The bwrap argument list running ``cmd`` in this sandbox with ``cwd`` (a path inside) as working folder.

        ``etc_dir`` is a host folder (outside anything the sandbox can write) for the synthetic /etc files.
        """
        exe = _bwrap() or "bwrap"
        args = [
            exe,
            "--die-with-parent",
            *_NS_FLAGS,
            "--new-session",
            "--cap-drop",
            "ALL",
            "--hostname",
            "sandbox",
            *_system_binds(),
        ]
        for name in _ETC:
            if Path("/etc", name).exists():
                args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        args += self._etc_files(etc_dir)
        for prefix in tool_prefixes():
            args += ["--ro-bind", str(prefix), str(prefix)]
        caps = self.caps
        args += [
            "--dev",
            "/dev",
            "--size",
            str(caps.shm_bytes),
            "--tmpfs",
            "/dev/shm",
            "--remount-ro",
            "/dev",
            "--proc",
            "/proc",
            "--size",
            str(caps.tmp_bytes),
            "--tmpfs",
            "/tmp",
            "--size",
            str(caps.home_bytes),
            "--tmpfs",
            SANDBOX_HOME,
        ]
        for inside, size in self.captured:
            args += ["--size", str(size), "--tmpfs", inside]
        if self.runner_dir is not None:
            args += ["--ro-bind", str(Path(self.runner_dir).resolve()), RUNNER_DIR]
        for item in self.read_only:
            src, dst = self._pair(item)
            args += ["--ro-bind", src, dst]
        for item in self.read_write:
            src, dst = self._pair(item)
            args += ["--bind", src, dst]
        args += ["--remount-ro", "/", "--chdir", cwd, "--"]
        return args + caps.wrap(cmd, shutil.which("python3", path=sandbox_path()) or "python3")

    def describe(self) -> dict[str, Any]:
        """Exactly what the sandbox allowed, for the results file."""
        system = [f"/{t}" for t in _SYSTEM_TOP if Path("/", t).exists()]
        if self.forward is not None:
            host, port, _, target = self.forward
            network = (
                f"none: new network namespace; only the model endpoint, {host}:{port} inside, forwarded over "
                f"a unix socket to {target}"
            )
        else:
            network = "none: new network namespace with loopback only"
        return {
            "tool": bwrap_version(),
            "unshared": list(UNSHARED),
            "read_only": system
            + [f"/etc/{n}" for n in _ETC if Path("/etc", n).exists()]
            + [f"/etc/{n} (synthetic)" for n in (*_SYNTHETIC_ETC, "hosts")]
            + [str(p) for p in tool_prefixes()]
            + ([f"{RUNNER_DIR} (runner files)"] if self.runner_dir is not None else [])
            + [self._pair(p)[1] for p in self.read_only],
            "read_write": [self._pair(p)[1] for p in self.read_write],
            "tmpfs": [
                f"/tmp ({self.caps.tmp_bytes} bytes)",
                f"{SANDBOX_HOME} (HOME, {self.caps.home_bytes} bytes)",
                f"/dev/shm ({self.caps.shm_bytes} bytes)",
            ]
            + [f"{inside} (captured, {size} bytes)" for inside, size in self.captured],
            "caps": self.caps.describe(),
            "root": "read-only tmpfs (nothing else of the host file system)",
            "network": network,
            "capabilities": "all dropped",
        }


class EndpointForwarder:
    """The runner's half of the endpoint forward: a unix socket whose every connection is piped to ``host:port``
    (by a small Node process, ``sandbox_programs/forward_outside.cjs``).

    The socket lives in a fresh short-named folder (unix socket paths are limited to 108 bytes); bind that folder
    read-only into the sandbox (connecting to a socket needs no write access to its file system).
    """

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        if parts.hostname is None:
            raise UserError(f"endpoint URL has no host: {base_url}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.folder = Path(tempfile.mkdtemp(prefix="hf-fwd-"))
        self.socket_path = self.folder / "model.sock"
        node = shutil.which("node")
        if node is None:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise UserError("node not found on PATH: the eval sandbox's endpoint forward runs on Node (as Pi does)")
        forward = program_text("forward_outside.cjs")
        self._proc = subprocess.Popen(
            [node, "-e", forward, str(self.socket_path), self.host, str(self.port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        line = self._proc.stdout.readline() if self._proc.stdout is not None else b""
        if line.strip() != b"ready":
            err = self._proc.stderr.read().decode(errors="replace").strip() if self._proc.stderr else ""
            self.close()
            raise UserError(f"the endpoint forwarder did not start: {err or line!r}")

    @property
    def listen_host(self) -> str:
        """The address the inside forwarder listens on: the endpoint's own IP literal, else 127.0.0.1."""
        try:
            socket.inet_pton(socket.AF_INET6 if ":" in self.host else socket.AF_INET, self.host)
            return self.host
        except OSError:
            return "127.0.0.1"

    @property
    def hostname(self) -> str | None:
        """The endpoint's host name when it is one (mapped to 127.0.0.1 inside), None for an IP literal."""
        return None if self.listen_host == self.host else self.host

    def close(self) -> None:
        proc = self._proc
        try:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> EndpointForwarder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# The sandbox's programs are real files in ``sandbox_programs/`` (package data), read when used:
# ``forward_outside.cjs`` (the runner's half of the endpoint forward, run by Node outside the sandbox),
# ``launch.mjs`` (run by Node inside the sandbox: wait for the runner's "go" on stdin (it holds the sandbox's sized
# tmpfs folders first, see eval/caps.py), copy the HOME seed into the fresh tmpfs HOME and the workspace seed into the
# workspace tmpfs, listen on the endpoint's address in the sandbox's own network namespace and pipe each connection
# to the unix socket bound in, then run the agent (stdin closed, in ``cwd``) and exit with its status; the PID
# namespace ends with this process, taking every child the agent left with it) and ``supervisor.py`` (the subreaper
# around an unsandboxed command).
PROGRAMS = Path(__file__).resolve().parent / "sandbox_programs"


def program_text(name: str) -> str:
    """The text of one of the sandbox's programs in ``sandbox_programs/``."""
    return (PROGRAMS / name).read_text(encoding="utf-8")


def supervised(cmd: Sequence[str]) -> list[str]:
    """``cmd`` under the subreaper supervisor: no process it starts outlives it (see
    ``sandbox_programs/supervisor.py``)."""
    return [sys.executable, "-I", "-c", program_text("supervisor.py"), *cmd]


def write_launcher(folder: Path) -> Path:
    """Write the in-sandbox launcher into ``folder`` (the runner's read-only folder); returns its host path."""
    path = folder / "launch.mjs"
    path.write_text(program_text("launch.mjs"), encoding="utf-8")
    return path
