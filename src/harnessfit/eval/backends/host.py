"""The host backend's answer to a Harbor Dockerfile's ``RUN`` steps: which ones this machine satisfies, and the
per-episode environment that does the rest.

A ``RUN`` step is read as a chain of simple commands (``&&`` / ``;``; no pipe, redirection or substitution), each
of which must be one of:

* ``apt-get``/``apt`` ``update``, ``clean``, ``autoclean``, ``autoremove``: nothing to do here;
* ``apt-get``/``apt`` ``install P…``: every ``P`` installed on this host (``dpkg-query``; a ``P=VERSION`` pin must
  match the installed version) — the runner installs nothing system-wide;
* ``pip install R…`` (or ``python -m pip``): each requirement fetched into the pinned wheel cache (``wheels``) and
  installed into a virtualenv of the episode's own (``make_venv``, made from the host Python the sandbox runs),
  whose ``bin`` goes first on PATH — so ``python``, ``python3`` and ``pip`` answer as in the ``python`` image;
* ``mkdir [-p] DIR…``: folders inside the working folder are made in its seed; ``/tests``, ``/logs`` and
  ``/solution`` are the runner's; any other folder outside the system paths (``/output``) is a folder of the
  episode bound read-write at that path for the agent and then, with what the agent left in it, for the verifier;
* ``rm -rf`` of package caches only (``/var/lib/apt/lists/*``, ``/var/cache/apt``, ``/root/.cache``, ``/tmp/*``).

Anything else — another command, a system path, a package the host lacks — keeps the task ``needs_container``, the
reason naming the step. ``pip`` inside the episode (agent or verifier) installs from the wheel cache alone
(``PIP_NO_INDEX``); the verifier's virtualenv is made fresh after the agent stopped, so nothing the agent installed
is what it is scored with.
"""

from __future__ import annotations

import functools
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from harnessfit.eval.sandbox import SANDBOX_HOME, SANDBOX_PATH
from harnessfit.eval.verifier_tools import INSTALLER_BIN, uv_bin, uv_env
from harnessfit.eval.wheels import WHEELS_INSIDE, fetch_wheels, offline_pip_env, pip_requirements

__all__ = ["HostSetup", "read_run_step", "make_venv", "SYSTEM_PATHS", "RUNNER_PATHS", "normalize"]

SYSTEM_PATHS = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/var",
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/boot",
    "/root",
    "/home",
)
RUNNER_PATHS = ("/tests", "/logs", "/solution", "/hf")  # made by the runner itself, fresh for each stage
_CACHES = ("/var/lib/apt/lists", "/var/cache/apt", "/var/cache/debconf", "/root/.cache", "/tmp")
_APT_NOOP = {"update", "clean", "autoclean", "autoremove"}
_APT_ARG_OPTIONS = {"-o", "--option", "-t", "--target-release", "-c", "--config-file"}
_SHELL = re.compile(r"\|\||\||[<>`]|\$\(")


def normalize(workdir: str, path: str) -> str:
    """``path`` made absolute against ``workdir``, ``.`` and ``..`` resolved lexically."""
    parts: list[str] = []
    for part in PurePosixPath(path if path.startswith("/") else f"{workdir}/{path}").parts[1:]:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return "/" + "/".join(parts)


def under(path: str, roots: tuple[str, ...] | list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


@dataclass
class HostSetup:
    """What a task's ``RUN`` steps asked for: host packages (checked), pip requirements, folders made."""

    apt: list[str] = field(default_factory=list)
    pip: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)  # absolute folders, as named by ``mkdir``

    def extra_dirs(self, mount: str) -> list[str]:
        """The folders the episode binds beside the workspace: made by ``mkdir`` outside it and the runner's."""
        return [d for d in dict.fromkeys(self.dirs) if not under(d, [mount, *RUNNER_PATHS])]

    def seed_dirs(self, mount: str) -> list[str]:
        return [d for d in dict.fromkeys(self.dirs) if under(d, [mount])]


@functools.lru_cache(maxsize=256)
def _installed_version(package: str) -> str | None:
    exe = shutil.which("dpkg-query")
    if exe is None:
        return None
    proc = subprocess.run(
        [exe, "-W", "-f=${Status}\t${Version}", package],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    status, _, version = proc.stdout.partition("\t")
    return version if proc.returncode == 0 and status.endswith(" installed") else None


def _apt(words: list[str], setup: HostSetup) -> str | None:
    i = 1
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in _APT_ARG_OPTIONS else 1
    if i >= len(words):
        return f"{words[0]} without a command"
    sub, rest = words[i], words[i + 1 :]
    if sub in _APT_NOOP:
        return None
    if sub != "install":
        return f"{words[0]} {sub} cannot be done on the host"
    skip = False
    for word in rest:
        if skip or word.startswith("-"):
            skip = word in _APT_ARG_OPTIONS
            continue
        name, _, pin = word.partition("=")
        if "/" in name or "*" in name:
            return f"apt package {word!r} cannot be checked on the host"
        version = _installed_version(name)
        if version is None:
            return f"apt package {name} is not installed on this host"
        if pin and pin != version:
            return f"apt package {name} is {version} on this host, not {pin}"
        setup.apt.append(name)
    return None


def _mkdir(words: list[str], workdir: str, setup: HostSetup) -> str | None:
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = word in ("-m", "--mode")
            continue
        path = normalize(workdir, word)
        if path == "/" or (under(path, SYSTEM_PATHS) and not under(path, RUNNER_PATHS)):
            return f"mkdir {path} (a system path) cannot be done on the host"
        setup.dirs.append(path)
    return None


def _rm(words: list[str], workdir: str) -> str | None:
    """Removing package caches changes nothing a task reads: skipped. Any other ``rm`` is refused."""
    for word in (w for w in words[1:] if not w.startswith("-")):
        if not under(normalize(workdir, word), _CACHES):
            return f"rm {word} cannot be done on the host"
    return None


def _command(part: str, workdir: str, setup: HostSetup) -> str | None:
    try:
        words = shlex.split(part)
    except ValueError:
        return f"cannot read {part.strip()[:60]!r}"
    while words and re.fullmatch(r"[A-Za-z_]\w*=\S*", words[0]):  # DEBIAN_FRONTEND=noninteractive apt-get …
        words = words[1:]
    if not words or words[0] in ("true", ":"):
        return None
    head = PurePosixPath(words[0]).name
    if head in ("apt-get", "apt"):
        return _apt(words, setup)
    if head == "mkdir":
        return _mkdir(words, workdir, setup)
    if head == "rm":
        return _rm(words, workdir)
    reqs, problem = pip_requirements(part)
    if problem:
        return problem
    if reqs or re.match(r"^(?:\S*/)?(?:pip3?(?:\.\d+)?|python3?(?:\.\d+)?\s+-m\s+pip)\s+install\b", part.strip()):
        setup.pip += reqs
        return None
    return f"{head} cannot be done on the host"


def read_run_step(command: str, workdir: str, setup: HostSetup) -> str | None:
    """Fold one ``RUN`` step's shell command into ``setup``; a problem (naming what could not be done) or None."""
    if command.lstrip().startswith("["):
        return "an exec-form RUN cannot be read on the host"
    if _SHELL.search(command):
        return "a pipe, redirection or substitution cannot be done on the host"
    for part in re.split(r"&&|;|\n", command):
        if part.strip():
            problem = _command(part, workdir, setup)
            if problem:
                return problem
    return None


def host_python() -> str:
    return shutil.which("python3", path=SANDBOX_PATH) or "python3"


def make_venv(folder: Path, requirements: list[str]) -> dict[str, str]:
    """A fresh virtualenv at ``folder`` (bound at the same path in the sandbox) with ``requirements`` installed
    from the wheel cache (fetched first); the environment variables that put it first on PATH and keep pip on
    the cache (bound read-only at ``WHEELS_INSIDE``). A failure raises with pip's last line."""
    wheels = fetch_wheels(requirements)
    if folder.exists():
        shutil.rmtree(folder)
    proc = subprocess.run(
        [host_python(), "-m", "venv", str(folder)],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode == 0 and requirements:
        proc = subprocess.run(
            [
                str(folder / "bin" / "pip"),
                "install",
                "--quiet",
                "--no-index",
                "--find-links",
                str(wheels),
                *requirements,
            ],
            capture_output=True,
            text=True,
            timeout=1800,
            stdin=subprocess.DEVNULL,
        )
    if proc.returncode != 0:
        last = ((proc.stderr or proc.stdout).strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the episode's virtualenv could not be made: {last[:300]}")
    return {**offline_pip_env(WHEELS_INSIDE), "VIRTUAL_ENV": str(folder)}


@dataclass
class StageEnv:
    """What one stage (the agent, then the verifier) of a host episode binds and sets beyond the workspace."""

    read_write: list[tuple[Path, str]] = field(default_factory=list)
    read_only: list[tuple[Path, str]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    venv: Path | None = None
    uv: str | None = None  # the uv version at ``$HOME/.local/bin`` (``verifier_tools``), or None

    def path(self, base: str) -> str:
        first = [f"{self.venv}/bin"] if self.venv is not None else []
        first += [f"{SANDBOX_HOME}/{INSTALLER_BIN}"] if self.uv is not None else []
        return ":".join([*first, base])


def stage_env(
    setup: HostSetup,
    mount: str,
    ep_dir: Path,
    stage: str,
    verifier_reqs: tuple[str, ...] | list[str] = (),
    uv: str | None = None,
) -> StageEnv:
    """The agent's (``stage="agent"``) or the verifier's environment: the folders ``mkdir`` made outside the
    workspace (``ep_dir/outside/…``: fresh for the agent, as the agent left them for the verifier), the wheel cache
    read-only, a virtualenv of the stage's own when anything is to be pip-installed (the verifier's made fresh,
    with the Dockerfile's and ``test.sh``'s requirements), and uv ``uv`` where astral's installer puts it
    (``$HOME/.local/bin``, read-only, on PATH) with uv kept offline on the wheel cache (``verifier_tools``)."""
    out = StageEnv(uv=uv)
    for folder in setup.extra_dirs(mount):
        host = ep_dir / "outside" / folder.lstrip("/")
        if stage == "agent" and host.exists():
            shutil.rmtree(host)
        host.mkdir(parents=True, exist_ok=True)
        out.read_write.append((host, folder))
    reqs = [*setup.pip, *(verifier_reqs if stage == "verifier" else [])]
    if reqs:
        out.venv = ep_dir / "env" / f"{stage}-venv"
        out.env = make_venv(out.venv, list(dict.fromkeys(reqs)))
        out.read_write.append((out.venv, str(out.venv)))
    if uv is not None:
        out.read_only.append((uv_bin(uv), f"{SANDBOX_HOME}/{INSTALLER_BIN}"))
        python = str(out.venv / "bin" / "python") if out.venv is not None else host_python()
        out.env.update(uv_env(WHEELS_INSIDE, python))
    if reqs or uv is not None:
        out.read_only.append((fetch_wheels([]), WHEELS_INSIDE))
    return out
