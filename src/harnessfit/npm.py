"""Installing pinned npm packages into a folder of harnessfit's own (the Pi CLI, the Svelte checkers).

One routine with the guarantees every install needs: idempotent (a folder that passes its check is kept), safe under
concurrency (one file lock per folder), and never half-done (npm runs in a temporary sibling folder that is renamed
into place only after the caller's check passed). Failures are one clear line (``UserError``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import orjson

from harnessfit.errors import UserError
from harnessfit.paths import file_lock

__all__ = ["require_node", "npm_install", "write_package_json", "install_npm_folder"]


def require_node() -> None:
    """A clear error when ``node`` or ``npm`` is missing from PATH."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        raise UserError(
            f"{' and '.join(missing)} not found on PATH: install Node.js >= 20.6 (with npm); harnessfit installs the "
            "Pi harness and the Svelte checkers from npm"
        )


def npm_install(folder: Path, what: str, *, timeout: float = 900.0) -> None:
    """``npm install`` the ``package.json`` in ``folder`` (exact versions, no audit); a one-line error on failure."""
    try:
        proc = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--save-exact"],
            cwd=folder,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        raise UserError(f"npm install of {what} took over {timeout / 60:.0f} minutes and was stopped") from exc
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        reason = next((ln for ln in lines if "ERR" in ln and "code" not in ln.lower()), None) or (
            lines[-1] if lines else f"exit code {proc.returncode}"
        )
        raise UserError(f"npm install of {what} failed: {reason}")


def write_package_json(folder: Path, name: str, dependencies: Mapping[str, str]) -> None:
    (folder / "package.json").write_bytes(
        orjson.dumps({"name": name, "private": True, "dependencies": dict(dependencies)})
    )


def install_npm_folder(
    target: Path,
    dependencies: Mapping[str, str],
    *,
    verify: Callable[[Path], str | None],
    name: str,
    prepare: Callable[[Path], None] | None = None,
    timeout: float = 900.0,
) -> Path:
    """Install ``dependencies`` (package → exact version) into ``target`` and return it.

    ``verify(folder)`` returns None when ``folder`` holds a working install, else a one-line reason; it decides both
    whether an existing ``target`` is kept and whether a fresh install is accepted. ``name`` is the ``package.json``
    name of the folder. ``prepare(tmp)``, when given, runs in the temporary folder after npm and before ``verify``
    (to add packages that depend on what was installed, or write files beside them); whatever it does is renamed
    into place with the rest, or discarded with it.
    """
    target = Path(target)
    if target.exists() and verify(target) is None:
        return target
    require_node()
    what = ", ".join(f"{pkg}@{ver}" for pkg, ver in dependencies.items())
    target.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(target.parent / f".{target.name}.lock"):
        if target.exists() and verify(target) is None:  # another process finished while we waited
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        try:
            write_package_json(tmp, name, dependencies)
            npm_install(tmp, what, timeout=timeout)
            if prepare is not None:
                prepare(tmp)
            problem = verify(tmp)
            if problem is not None:
                raise UserError(f"installed {what} but {problem}")
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target
