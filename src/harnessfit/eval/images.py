"""Container engines and the offline-made base image that Harbor tasks' ``FROM python/debian`` lines run on.

Engine choice (``detect_engine``): podman first (daemon-less), then docker — a ``docker`` client counts only when
``docker info`` reaches a daemon. An engine counts only when a container really starts: the probe runs ``true``
in the base image with ``--network none``, trying the default OCI runtime, then ``runc`` (crun cannot run on a
cgroups-v1/hybrid host), each with the default ulimits and then with lowered ones (``nofile``/``nproc`` 1024: a
rootless user without ``CAP_SYS_RESOURCE`` cannot raise them to the defaults). The first set of flags that works
is what every later ``run``/``build`` uses; when none works the error names each engine's last failure.

The base image (``ensure_base_image``) is made from Debian packages, never pulled from a registry:
``mmdebstrap --variant=apt --include=python3,ca-certificates bookworm OUT.tar`` once, cached as
``<harnessfit home>/images/bookworm-py.tar``, then ``podman import``-ed as ``BASE_IMAGE``. It stands in for the
Debian/Python images Harbor tasks name (``stand_in``): Debian bookworm's Python is 3.11, so ``python:3.11…`` and
``python:3…`` and ``debian:bookworm…``/``debian:12…`` only.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from harnessfit.errors import UserError
from harnessfit.paths import file_lock, home

__all__ = [
    "BASE_IMAGE",
    "PYTHON_IMAGE",
    "ContainerEngine",
    "ensure_python_image",
    "detect_engine",
    "ensure_base_image",
    "base_image_tar",
    "stand_in",
    "image_exists",
]

BASE_IMAGE = "localhost/harnessfit-bookworm-py:1"
PYTHON_IMAGE = "localhost/harnessfit-bookworm-py:1-pip"  # BASE_IMAGE + pip, laid out as python:3.11-slim is
BASE_PYTHON = (3, 11)  # Debian bookworm's python3
_LOW_ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
_STAND_IN = re.compile(
    r"(?:docker\.io/)?(?:library/)?(?:python:3(?:\.11(?:\.\d+)*)?(?:-[\w.-]+)?"
    r"|debian:(?:bookworm|12)(?:[\w.-]*))"
)


@dataclass(frozen=True)
class ContainerEngine:
    """A container engine that was seen to start a container, and the flags it needed for that."""

    name: str  # "podman" or "docker"
    exe: str
    run_flags: tuple[str, ...] = field(default=())  # e.g. ("--runtime", "runc", "--ulimit", "nofile=1024:1024")
    limits: bool = False  # whether --memory / --pids-limit take effect here (probed: cgroups may not allow them)

    def cap_flags(self, memory_bytes: int, processes: int) -> tuple[str, ...]:
        """The resource caps of a container (memory without extra swap, processes), when the engine enforces
        them here; () otherwise (the results say which caps held: ``enforced_caps``)."""
        if not self.limits:
            return ()
        return ("--memory", str(memory_bytes), "--memory-swap", str(memory_bytes), "--pids-limit", str(processes))

    def enforced_caps(self, memory_bytes: int, processes: int) -> dict[str, int]:
        """The caps ``cap_flags`` sets, for the episode's recorded policy ({} where none is enforced)."""
        return {"memory_bytes": memory_bytes, "processes": processes} if self.limits else {}

    def cmd(self, *args: str) -> list[str]:
        return [self.exe, *args]

    @property
    def build_flags(self) -> tuple[str, ...]:
        return self.run_flags  # podman build / docker build take --runtime and --ulimit alike


def base_image_tar() -> Path:
    return home() / "images" / "bookworm-py.tar"


def stand_in(image: str) -> str | None:
    """Why the offline base image cannot stand in for ``image``, or None when it can."""
    if _STAND_IN.fullmatch(image.strip()):
        return None
    return (
        f"no offline stand-in for {image} (the offline image is Debian bookworm with Python "
        f"{BASE_PYTHON[0]}.{BASE_PYTHON[1]})"
    )


def _run(cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def image_exists(exe: str, image: str) -> bool:
    try:
        return _run([exe, "image", "inspect", image], timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = (proc.stderr or proc.stdout or "").strip().splitlines()
    return lines[-1][:200] if lines else f"exit code {proc.returncode}"


def _probe(name: str, exe: str, image: str) -> tuple[tuple[str, ...] | None, str]:
    """The run flags under which ``exe`` starts a container of ``image``, or (None, the last failure)."""
    if name == "docker":
        info = _run([exe, "info"], timeout=30)
        if info.returncode != 0:
            return None, f"docker: no daemon ({_last_line(info)})"
    if image == BASE_IMAGE:
        ensure_base_image(exe)
    runtimes: list[list[str]] = [[]]
    if shutil.which("runc"):
        runtimes.append(["--runtime", "runc"])
    why = "no attempt"
    for runtime in runtimes:
        for ulimits in ([], _LOW_ULIMITS):
            flags = (*runtime, *ulimits)
            try:
                proc = _run([exe, "run", "--rm", "--network", "none", *flags, image, "true"])
            except subprocess.TimeoutExpired:
                why = f"{name} run {' '.join(flags)}: timed out"
                continue
            if proc.returncode == 0:
                return flags, ""
            why = f"{name} run {' '.join(flags) or '(default flags)'}: {_last_line(proc)}"
    return None, why


_PROBE_CAPS = ("--memory", "268435456", "--memory-swap", "268435456", "--pids-limit", "256")


def _limits_work(exe: str, flags: tuple[str, ...], image: str) -> bool:
    """Whether a container started with memory and process caps runs (a cgroup setup may refuse them)."""
    try:
        proc = _run([exe, "run", "--rm", "--network", "none", *flags, *_PROBE_CAPS, image, "true"])
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0


@functools.lru_cache(maxsize=4)
def detect_engine(asked: str | None = None, image: str = BASE_IMAGE) -> ContainerEngine:
    """The container engine to use (``asked``: ``podman`` or ``docker``; None: podman, then docker)."""
    if asked not in (None, "podman", "docker"):
        raise UserError(f"unknown container engine {asked!r} (podman or docker)")
    problems = []
    for name in [asked] if asked else ["podman", "docker"]:
        exe = shutil.which(name)
        if exe is None:
            problems.append(f"{name}: not installed")
            continue
        flags, why = _probe(name, exe, image)
        if flags is not None:
            return ContainerEngine(name, exe, flags, limits=_limits_work(exe, flags, image))
        problems.append(why)
    raise UserError("no container engine can run a container here: " + "; ".join(problems))


def _build_tar(tar: Path) -> None:
    mmdebstrap = shutil.which("mmdebstrap")
    if mmdebstrap is None:
        raise UserError(f"no {tar} and no mmdebstrap to make it (apt-get install mmdebstrap)")
    tar.parent.mkdir(parents=True, exist_ok=True)
    part = tar.with_suffix(".part.tar")
    proc = subprocess.run(
        [mmdebstrap, "--variant=apt", "--include=python3,ca-certificates", "bookworm", str(part)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        part.unlink(missing_ok=True)
        raise UserError(f"mmdebstrap could not make the base image: {_last_line(proc)}")
    os.replace(part, tar)


def ensure_base_image(exe: str, tar: Path | None = None) -> str:
    """``BASE_IMAGE`` in the engine's store: kept when there, else imported from ``tar`` (default: the cached
    ``base_image_tar()``, made with mmdebstrap when missing — a few minutes, once)."""
    if image_exists(exe, BASE_IMAGE):
        return BASE_IMAGE
    tar = Path(tar) if tar is not None else base_image_tar()
    with file_lock(home() / "images" / ".lock"):
        if image_exists(exe, BASE_IMAGE):
            return BASE_IMAGE
        if not tar.is_file():
            _build_tar(tar)
        proc = _run([exe, "import", str(tar), BASE_IMAGE], timeout=900)
        if proc.returncode != 0:
            raise UserError(f"{exe} import {tar} failed: {_last_line(proc)}")
    return BASE_IMAGE


# the layer that makes the Debian image answer as python:3.11-slim does: ``python`` and ``pip`` on PATH, and pip
# allowed to install (Debian marks its Python EXTERNALLY-MANAGED; the python image's does not); from the apt mirror
_PYTHON_LAYER = f"""FROM {BASE_IMAGE}
RUN apt-get update && apt-get install -y --no-install-recommends python3-pip python3-venv \\
 && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED && ln -s /usr/bin/python3 /usr/local/bin/python \\
 && ln -s /usr/bin/pip3 /usr/local/bin/pip && rm -rf /var/lib/apt/lists/*
"""


def ensure_python_image(engine: ContainerEngine) -> str:
    """``PYTHON_IMAGE``: the base image plus Debian's pip (one build, then kept in the engine's store)."""
    ensure_base_image(engine.exe)
    if image_exists(engine.exe, PYTHON_IMAGE):
        return PYTHON_IMAGE
    with file_lock(home() / "images" / ".lock"):
        if not image_exists(engine.exe, PYTHON_IMAGE):
            proc = subprocess.run(
                engine.cmd("build", *engine.build_flags, "-t", PYTHON_IMAGE, "-f", "-", "."),
                input=_PYTHON_LAYER,
                capture_output=True,
                text=True,
                cwd=home() / "images",
                timeout=1800,
            )
            if proc.returncode != 0:
                raise UserError(f"could not add pip to the base image: {_last_line(proc)}")
    return PYTHON_IMAGE


def main(argv: list[str] | None = None) -> int:
    """``python -m harnessfit.eval.images [TAR]``: make (or import) the base image once (``make harbor-image``)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    exe = shutil.which("podman") or shutil.which("docker")
    if exe is None:
        print("no podman or docker here: the container backend is unavailable", file=sys.stderr)
        return 1
    try:
        image = ensure_base_image(exe, Path(args[0]) if args else None)
        engine = detect_engine()
        image = ensure_python_image(engine)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{image} ready; {engine.name} runs it with flags: {' '.join(engine.run_flags) or '(none)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
