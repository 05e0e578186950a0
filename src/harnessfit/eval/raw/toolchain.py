"""The raw checkers' pinned toolchains: the Svelte compiler and the Svelte autofixer from npm (installed into
harnessfit's own folder, like Pi), and ruff from PyPI (a dependency of harnessfit, run from its own package).

``svelte`` is pinned to the compiler version that ``@sveltejs/mcp`` bundles for its autofixer, so the compile
check and the autofixer read a component with the same compiler and agree on every compiler warning.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import orjson

from harnessfit.errors import UserError
from harnessfit.npm import install_npm_folder
from harnessfit.paths import home

__all__ = [
    "SVELTE_VERSION",
    "SVELTE_MCP_VERSION",
    "svelte_toolchain_dir",
    "install_svelte",
    "svelte_toolchain",
    "ruff_binary",
    "ruff_version",
    "install_toolchains",
]

SVELTE_VERSION = "5.56.1"
SVELTE_MCP_VERSION = "0.1.26"
_PACKAGES = {"svelte": SVELTE_VERSION, "@sveltejs/mcp": SVELTE_MCP_VERSION}


def svelte_toolchain_dir() -> Path:
    """``<HARNESSFIT_HOME>/toolchain/svelte/<svelte>-mcp-<mcp>`` (it may not exist yet)."""
    return home() / "toolchain" / "svelte" / f"{SVELTE_VERSION}-mcp-{SVELTE_MCP_VERSION}"


def _installed_version(folder: Path, package: str) -> str | None:
    try:
        return orjson.loads((folder / "node_modules" / package / "package.json").read_bytes()).get("version")
    except (OSError, ValueError, AttributeError):
        return None


def _verify(folder: Path) -> str | None:
    for package, version in _PACKAGES.items():
        got = _installed_version(folder, package)
        if got != version:
            return f"{package} there is {got or 'missing'}, not {version}"
    return None


def install_svelte() -> Path:
    """Install the pinned Svelte compiler and autofixer (idempotent, locked, atomic); returns the folder."""
    return install_npm_folder(svelte_toolchain_dir(), _PACKAGES, verify=_verify, name="harnessfit-svelte-checkers")


def svelte_toolchain(*, install: bool = True) -> Path:
    """The installed folder; installs it on first use unless ``install`` is False (then a clear error)."""
    folder = svelte_toolchain_dir()
    if _verify(folder) is None:
        return folder
    if not install:
        raise UserError("the Svelte checkers are not installed: run `harnessfit eval toolchain`")
    return install_svelte()


def ruff_binary() -> Path:
    """The ``ruff`` executable of the installed ``ruff`` package (harnessfit pins it), never one from PATH."""
    try:
        from ruff.__main__ import find_ruff_bin
    except ImportError as exc:
        raise UserError("the Python checker needs the ruff package: pip install ruff==0.17.6") from exc
    return Path(find_ruff_bin())


def ruff_version() -> str:
    return importlib.metadata.version("ruff")


def install_toolchains() -> dict[str, str]:
    """Everything the raw checkers need, installed; returns tool → version (``harnessfit eval toolchain`` prints it)."""
    folder = install_svelte()
    ruff_binary()
    return {
        "svelte": SVELTE_VERSION,
        "@sveltejs/mcp": SVELTE_MCP_VERSION,
        "ruff": ruff_version(),
        "svelte_folder": str(folder),
    }
