"""uv for Harbor verifiers, offline: what ``tests/test.sh`` would download is answered from the pinned wheel cache.

Many public Harbor verifiers start with astral's installer and then run pytest through uv::

    curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
    source $HOME/.local/bin/env
    uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest --ctrf /logs/verifier/ctrf.json /tests/…

Nothing is fetched at verify time here, so ``read_test_sh`` reads the script first (on the host, before the
verifier starts):

* the astral installer (``astral.sh/uv[/VERSION]/install.sh`` or the GitHub release's ``uv-installer.sh``) is
  stood in for, not rewritten: the uv it names (the pinned ``UV_DEFAULT`` when it names none) is taken from the
  wheel cache (``make setup`` holds ``UV_DEFAULT`` and the version Harbor's task template pins; another version is
  fetched into the cache before the verifier starts, like ``test.sh``'s own ``pip install`` lines) and unpacked
  once into ``<harnessfit home>/uv/VERSION`` as the installer would leave ``$HOME/.local/bin``: ``uv``, ``uvx`` and
  an ``env`` script that puts that folder on PATH. The verifier sees that folder read-only at
  ``$HOME/.local/bin`` and on its PATH. The installer line itself still runs and fails (no network): ``curl``
  cannot resolve the host and ``sh`` reads an empty script, exiting 0 — so a ``test.sh`` under ``set -o pipefail``
  and ``set -e`` would stop there (none of Harbor's templates sets both);
* any other ``curl``/``wget`` of a non-local URL is a download that cannot succeed offline: the verifier is not
  run and the episode's verifier fails with "test.sh fetches URL at verify time; harnessfit verifies offline";
* a script that names ``uv`` or ``uvx`` without the installer gets the pinned uv the same way;
* uv runs offline (``uv_env``): ``UV_OFFLINE``, no index, ``UV_FIND_LINKS`` at the wheel cache, no Python
  downloads and ``UV_PYTHON`` at the environment's Python. Measured with uv 0.13.9: ``uvx -w pytest==8.4.1 -w
  pytest-json-ctrf==0.3.5 pytest`` installs from the cache in about a second; ``uvx -p 3.13`` without a Python
  3.13 fails with "No interpreter found for Python 3.13 in managed installations or search path" — and since a
  Harbor template then writes reward 0, a ``-p``/``--python`` version other than the environment's is named
  before the verifier runs ("test.sh asks uv for Python 3.13; …") instead of scoring every agent 0.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from harnessfit.errors import UserError
from harnessfit.eval.wheels import UV_DEFAULT, VERIFIER_TOOLS, fetch_wheels
from harnessfit.paths import file_lock, home

__all__ = ["UvPlan", "read_test_sh", "uv_bin", "uv_env", "INSTALLER_BIN"]

INSTALLER_BIN = ".local/bin"  # where astral's installer puts uv, relative to HOME
_URL = re.compile(r"""https?://[^\s'"|;&<>()`]+""")
_FETCHER = re.compile(r"(?<![\w./-])(?:curl|wget)(?![\w.-])")
_UV_INSTALLER = re.compile(
    r"https?://(?:astral\.sh/uv(?:/(?P<a>\d+\.\d+\.\d+))?/install\.sh"
    r"|github\.com/astral-sh/uv/releases/(?:download/(?P<b>\d+\.\d+\.\d+)|latest/download)"
    r"/uv-installer\.sh)"
)
_LOCAL = re.compile(r"https?://(?:localhost|127(?:\.\d+){3}|0\.0\.0\.0|\[::1\])(?:[:/]|$)")
_USES_UV = re.compile(r"(?<![\w./-])uvx?(?![\w.-])")
_UV_PYTHON = re.compile(
    r"(?<![\w./-])uvx?(?![\w.-])[^\n]*?\s(?:-p|--python)[ =]['\"]?(?:cpython-|python)?"
    r"(\d+)\.(\d+)"
)
_ENV_SCRIPT = """\
# harnessfit: uv {version} from the pinned wheel cache stands in for astral's uv installer (the verifier is
# offline). As the installer's env script does, put $HOME/.local/bin on PATH once.
case ":$PATH:" in
  *":$HOME/.local/bin:"*) ;;
  *) PATH="$HOME/.local/bin:$PATH"; export PATH ;;
esac
"""


@dataclass(frozen=True)
class UvPlan:
    """What a ``test.sh`` asks of uv: the version the verifier gets (None: it uses no uv), the installer URL that
    version stands in for, and why the verifier cannot run offline (or None)."""

    version: str | None = None
    installer: str | None = None
    problem: str | None = None

    def describe(self) -> dict[str, str]:
        """For the verifier's sandbox policy in the results: which uv it had and what that stood in for."""
        if self.version is None:
            return {}
        said = f"uv {self.version} from the pinned wheel cache at $HOME/{INSTALLER_BIN}, offline"
        return {"uv": said + (f" (stands in for {self.installer})" if self.installer else "")}


def _logical_lines(text: str) -> list[str]:
    """The script's lines, continuation lines joined, whole-line comments dropped."""
    return [line for line in text.replace("\\\n", " ").splitlines() if not line.lstrip().startswith("#")]


def read_test_sh(text: str, python: tuple[int, int] | None) -> UvPlan:
    """Read ``test.sh`` ahead of the verifier; ``python`` is the environment's Python (None when unknown)."""
    lines = _logical_lines(text)
    version, installer = None, None
    for line in lines:
        if not _FETCHER.search(line):
            continue
        for url in _URL.findall(line):
            if _LOCAL.match(url):
                continue
            found = _UV_INSTALLER.fullmatch(url)
            if found is None:
                return UvPlan(problem=f"test.sh fetches {url} at verify time; harnessfit verifies offline")
            installer, version = url, found.group("a") or found.group("b") or UV_DEFAULT
    code = [re.sub(r"\s#.*", "", line) for line in lines]  # trailing comments too (a URL's #fragment aside)
    if version is None and any(_USES_UV.search(line) for line in code):
        version = UV_DEFAULT
    if version is not None and python is not None:
        for line in code:
            for major, minor in _UV_PYTHON.findall(line):
                if (int(major), int(minor)) != python:
                    return UvPlan(
                        version,
                        installer,
                        problem=(
                            f"test.sh asks uv for Python {major}.{minor}; the verifier's environment has Python "
                            f"{python[0]}.{python[1]} and uv downloads no Python offline"
                        ),
                    )
    return UvPlan(version, installer)


def uv_bin(version: str) -> Path:
    """The folder astral's installer would leave at ``$HOME/.local/bin`` for uv ``version`` (``uv``, ``uvx``,
    ``env``), unpacked once from the pinned wheel cache (the wheel fetched into it first when missing)."""
    folder = home() / "uv" / version
    if (folder / "env").is_file():  # written last: a folder with it is complete
        return folder
    wheels = fetch_wheels([f"uv=={version}"])
    with file_lock(folder.parent / ".lock"):
        if (folder / "env").is_file():
            return folder
        wheel = next(iter(sorted(wheels.glob(f"uv-{version}-py3-none-*manylinux*x86_64*.whl"))), None)
        if wheel is None:
            raise RuntimeError(f"no uv {version} Linux wheel in the wheel cache {wheels}")
        partial = folder.with_name(f".{version}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        with zipfile.ZipFile(wheel) as whl:
            for name in ("uv", "uvx"):
                (partial / name).write_bytes(whl.read(f"uv-{version}.data/scripts/{name}"))
                os.chmod(partial / name, 0o755)
        (partial / "env").write_text(_ENV_SCRIPT.format(version=version), encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    return folder


def uv_env(wheels_inside: str, python: str) -> dict[str, str]:
    """What keeps uv offline and on the wheel cache, with ``python`` (a path or a name on PATH) its interpreter."""
    return {
        "UV_OFFLINE": "1",
        "UV_NO_INDEX": "1",
        "UV_FIND_LINKS": wheels_inside,
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_PYTHON": python,
        "UV_NO_PROGRESS": "1",
    }


def main() -> int:
    """``make setup`` runs this: fetch ``VERIFIER_TOOLS`` into the wheel cache
    and unpack each pinned uv."""
    try:
        print(fetch_wheels(VERIFIER_TOOLS))
        for req in VERIFIER_TOOLS:
            if req.startswith("uv=="):
                print(uv_bin(req[4:]))
    except (UserError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
