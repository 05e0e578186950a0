"""File operations on a folder an agent controlled, done by the runner outside the sandbox without following links.

After an episode the workspace holds whatever the agent left: symlinks to ``~/.bashrc``, a linked folder that
leads anywhere, a FIFO where a file is expected. The runner still has to copy the checker's files in and read the
files the expected-change predicates name. Both walk the path one component at a time from an open folder
descriptor (``openat`` with ``O_NOFOLLOW``), so no link is ever followed — neither to the outside nor inside:

- ``copy_into`` removes whatever stands where a checker file or folder goes (a link, a file where a folder
  belongs, a folder where a file belongs) and creates the real thing with ``O_CREAT | O_EXCL``;
- ``read_regular`` returns the bytes of a regular file, or None for anything else (missing, a link anywhere on the
  path, a FIFO, a device, a folder); it opens with ``O_NONBLOCK`` so a FIFO cannot block it, and reads at most
  ``limit`` bytes.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path, PurePosixPath

__all__ = ["copy_into", "read_regular", "relative_parts"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def relative_parts(rel: str) -> tuple[str, ...]:
    """The components of a workspace-relative path; ValueError for an absolute path, ``..`` or an empty one."""
    pure = PurePosixPath(rel)
    if pure.is_absolute() or not pure.parts or any(p in ("..", "") for p in pure.parts):
        raise ValueError(f"not a plain relative path inside the workspace: {rel!r}")
    return tuple(p for p in pure.parts if p != ".")


def _remove(name: str, dir_fd: int) -> None:
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)  # the fd-based rmtree never follows links
    else:
        os.unlink(name, dir_fd=dir_fd)


def _exists(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


def _open_dir(name: str, dir_fd: int, *, create: bool) -> int:
    """Open sub-folder ``name`` of ``dir_fd`` without following a link; with ``create``, replace what is in the way."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        if not create:
            raise
    if _exists(name, dir_fd):
        _remove(name, dir_fd)
    os.mkdir(name, 0o755, dir_fd=dir_fd)
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _walk(root: Path, parts: tuple[str, ...], *, create: bool) -> int:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            nxt = _open_dir(part, fd, create=create)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def copy_into(src: Path, dst_root: Path) -> list[str]:
    """Copy the regular files and folders under ``src`` (trusted: a task's own folder) into ``dst_root``.

    Nothing under ``dst_root`` is followed: an entry in the way of a file or folder of ``src`` is removed first.
    Returns the relative paths written. ``__pycache__`` folders are skipped.
    """
    written: list[str] = []
    if not src.is_dir():
        return written
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if "__pycache__" in rel.parts:
            continue
        parts = tuple(rel.parts)
        if path.is_dir():
            os.close(_walk(dst_root, parts, create=True))
            continue
        if not path.is_file():
            continue
        fd = _walk(dst_root, parts[:-1], create=True)
        try:
            if _exists(parts[-1], fd):
                _remove(parts[-1], fd)
            out = os.open(
                parts[-1],
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                path.stat().st_mode & 0o777 | 0o600,
                dir_fd=fd,
            )
            with os.fdopen(out, "wb") as fh:
                fh.write(path.read_bytes())
        finally:
            os.close(fd)
        written.append(rel.as_posix())
    return written


def read_regular(root: Path, rel: str, *, limit: int | None = 16 * 1024 * 1024) -> bytes | None:
    """The first ``limit`` bytes (all with None) of regular file ``rel`` under ``root``, or None when it is
    anything else."""
    try:
        parts = relative_parts(rel)
        fd = _walk(root, parts[:-1], create=False)
    except (OSError, ValueError):
        return None
    try:
        try:
            ffd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        except OSError:
            return None
        with os.fdopen(ffd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            return fh.read() if limit is None else fh.read(limit)
    finally:
        os.close(fd)
