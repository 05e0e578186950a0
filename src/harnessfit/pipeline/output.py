"""Output folders a stage owns, written so that nothing is lost: ``StagedFolder``.

A stage (``build``, ``convert``) never writes into its output folder in place. It

1. refuses an output that lies inside one of its inputs, or holds one (the next run would read its own output, or
   the swap below would remove an input);
2. refuses an existing non-empty folder unless the stage's ``problem`` check says the stage wrote it itself
   (``build``: harnessfit's own manifest, listing every file there; ``convert``: only its own files);
3. writes into a hidden sibling, ``.<name>.partial-<random>``, held under an advisory lock while in use;
4. on success swaps the sibling in by one rename (Linux ``renameat2(RENAME_EXCHANGE)``; elsewhere two renames with
   the previous folder parked as ``.<name>.previous-<random>``) and only then removes the previous content.

So a run that fails, is interrupted or is killed (``kill -9``) leaves the previous output exactly as it was; the
next run removes the unlocked leftovers of killed runs (and puts back a parked previous folder that a kill
between the two fallback renames left without a successor).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import secrets
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from harnessfit.errors import UserError

__all__ = ["StagedFolder", "unlisted_entries", "check_disjoint"]

_PARTIAL = ".partial-"
_PREVIOUS = ".previous-"


def unlisted_entries(folder: Path, listed: set[str]) -> list[str]:
    """Every entry under ``folder`` that is not a folder and not in ``listed`` (relative POSIX paths), sorted;
    symbolic links are entries (never followed)."""
    out = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        here = Path(root)
        for name in files + [d for d in dirs if (here / d).is_symlink()]:
            rel = (here / name).relative_to(folder).as_posix()
            if rel not in listed:
                out.append(rel)
    return sorted(out)


def check_disjoint(out: Path, inputs: Iterable[Path], what: str = "output folder") -> None:
    """``UserError`` when ``out`` is an input, lies inside an input folder, or holds an input."""
    out = Path(os.path.abspath(out))
    real_out = out.resolve()
    for raw in inputs:
        for inp in {Path(os.path.abspath(raw)), _resolved(Path(raw))}:
            for o in {out, real_out}:
                if o == inp or inp in o.parents:
                    raise UserError(f"{what} {out} is inside the input {raw}: choose an --out outside the inputs")
                if o in inp.parents:
                    raise UserError(f"the input {raw} is inside the {what} {out}: choose another --out")


def _resolved(p: Path) -> Path:
    try:
        return p.resolve()
    except (OSError, RuntimeError):  # a symlink loop: its absolute path is all there is
        return Path(os.path.abspath(p))


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2`` with ``RENAME_EXCHANGE``); False where unsupported."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _lock(folder: Path) -> int | None:
    """An exclusive advisory lock on ``folder`` (its descriptor), or None when another process holds it."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


class StagedFolder:
    """The output folder ``final`` of one run, written through the hidden sibling ``path`` (see the module
    docstring). ``problem(final)`` says why an existing non-empty ``final`` is not this stage's to replace (``None``:
    it is). ``inputs``: the run's inputs, which ``final`` must neither lie in nor hold.

    Use as a context manager (``commit`` on success, ``abort`` on any exception), or call them yourself."""

    def __init__(
        self,
        final: Path,
        *,
        problem: Callable[[Path], str | None],
        inputs: Iterable[Path] = (),
        what: str = "output folder",
    ) -> None:
        self.final = Path(os.path.abspath(final))
        check_disjoint(self.final, inputs, what)
        parent, name = self.final.parent, self.final.name
        if self.final.is_symlink() or (self.final.exists() and not self.final.is_dir()):
            raise UserError(f"{what} exists and is not a folder: {self.final}")
        if parent.exists() and not parent.is_dir():
            raise UserError(f"the parent of the {what} is not a folder: {parent}")
        parent.mkdir(parents=True, exist_ok=True)
        self._recover(parent, name)
        if self.final.is_dir() and any(self.final.iterdir()):
            why = problem(self.final)
            if why is not None:
                raise UserError(f"{what} {self.final} {why}; choose another --out or move it away")
        self.path = parent / f".{name}{_PARTIAL}{secrets.token_hex(4)}"
        self.path.mkdir()
        self._fd = _lock(self.path)
        self.done = False

    @staticmethod
    def _recover(parent: Path, name: str) -> None:
        """Leftovers of killed runs: an unlocked partial folder is removed; a parked previous folder whose successor
        never arrived is put back."""
        for p in sorted(parent.glob(f".{name}{_PREVIOUS}*")):
            final = parent / name
            if not final.exists():
                os.rename(p, final)
            elif (fd := _lock(p)) is not None:
                shutil.rmtree(p, ignore_errors=True)
                os.close(fd)
        for p in sorted(parent.glob(f".{name}{_PARTIAL}*")):
            if p.is_dir() and not p.is_symlink() and (fd := _lock(p)) is not None:
                shutil.rmtree(p, ignore_errors=True)
                os.close(fd)

    def commit(self) -> None:
        """Put the written folder in place of ``final``; the previous content is removed after the swap."""
        if self.done:
            return
        self.done = True
        try:
            if not self.final.exists():
                os.rename(self.path, self.final)
            elif _exchange(self.path, self.final):
                shutil.rmtree(self.path, ignore_errors=True)  # now the previous content
            else:
                parked = self.final.parent / f".{self.final.name}{_PREVIOUS}{secrets.token_hex(4)}"
                os.rename(self.final, parked)
                os.rename(self.path, self.final)
                shutil.rmtree(parked, ignore_errors=True)
        finally:
            self._unlock()

    def abort(self) -> None:
        """Remove what this run wrote; ``final`` is untouched."""
        if self.done:
            return
        self.done = True
        shutil.rmtree(self.path, ignore_errors=True)
        self._unlock()

    def _unlock(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> StagedFolder:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
