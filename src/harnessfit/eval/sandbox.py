"""Bubblewrap sandbox for eval episodes: ``/`` read-only, only the episode's workspace, HOME and session folder
writable, a private ``/tmp``, the network shared (the model endpoint is on loopback).

An agent under evaluation runs arbitrary bash; the sandbox keeps it from touching anything but its own
workspace. Where bwrap is missing or cannot create namespaces (some containers), episodes run unsandboxed and the
results say so plainly (``sandbox: "none: <why>"``) instead of pretending.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["sandbox_status", "wrap_command"]


@functools.lru_cache(maxsize=1)
def sandbox_status() -> str:
    """``"bwrap"`` when a read-only-root bwrap sandbox works here, else ``"none: <why>"``."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "none: bwrap not found on PATH (install the Debian package bubblewrap)"
    probe = [exe, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--tmpfs", "/tmp", "true"]
    try:
        proc = subprocess.run(probe, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"none: bwrap probe failed ({exc})"
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return f"none: bwrap cannot create a sandbox here ({why})"
    return "bwrap"


def wrap_command(
    cmd: Sequence[str],
    *,
    cwd: Path,
    writable: Sequence[Path],
    readable: Sequence[Path] = (),
) -> list[str]:
    """``cmd`` run inside bwrap: root read-only, private /tmp, ``writable`` bound read-write at the same paths.

    ``readable`` are extra read-only binds (needed only for paths under /tmp, which the private tmpfs hides).
    The caller decides whether to wrap at all (see ``sandbox_status``).
    """
    exe = shutil.which("bwrap") or "bwrap"
    args = [exe, "--die-with-parent", "--unshare-pid", "--new-session",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in readable:
        p = str(Path(path).resolve())
        args += ["--ro-bind", p, p]
    for path in writable:
        p = str(Path(path).resolve())
        args += ["--bind", p, p]
    args += ["--chdir", str(Path(cwd).resolve()), "--"]
    return args + list(cmd)
