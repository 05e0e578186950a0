"""A Harbor task's Dockerfile, read for what the host sandbox can stand in for: the base image (a Python image this
host's Python matches), the mounted workspace folder and working folder, the files ``COPY`` puts there, the ``ENV``
values, and the ``RUN`` steps the host satisfies (``backends.host``); any other instruction that changes files makes
the task need a container build (the reason is recorded)."""

from __future__ import annotations

import dataclasses
import functools
import re
import shlex
import shutil
import subprocess
from pathlib import Path, PurePosixPath

import orjson

from harnessfit.eval.backends.container_image import dockerfile_lines
from harnessfit.eval.backends.host import HostSetup, normalize, read_run_step
from harnessfit.eval.sandbox import SANDBOX_PATH

__all__ = ["read_dockerfile", "base_image", "host_python"]

_NO_FILE_CHANGE = {"CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "ARG", "MAINTAINER", "STOPSIGNAL", "SHELL", "HEALTHCHECK"}


@functools.lru_cache(maxsize=1)
def host_python() -> tuple[int, int] | None:
    """(major, minor) of the host's ``python3`` on the sandbox's PATH, or None."""
    exe = shutil.which("python3", path=SANDBOX_PATH)
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=30
        ).stdout.split()
        return int(out[0]), int(out[1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None


def _stand_in(image: str) -> str | None:
    """Why the host cannot stand in for base image ``image``, or None when it can (a matching host Python)."""
    m = re.fullmatch(r"(?:docker\.io/)?(?:library/)?python:(3)(?:\.(\d+))?(?:[.\d]*)(?:-[\w.-]+)?", image)
    host = host_python()
    if m is None:
        return f"needs the container image {image}"
    if host is None:
        return f"needs {image}: no python3 on this host"
    if m.group(2) is not None and int(m.group(2)) != host[1]:
        return f"needs {image}: this host's Python is {host[0]}.{host[1]}"
    return None


def base_image(env_dir: Path) -> str | None:
    """The image of the Dockerfile's first ``FROM`` (its flags, such as ``--platform``, skipped), or None."""
    path = env_dir / "Dockerfile"
    if not path.is_file():
        return None
    for line in dockerfile_lines(path.read_text(encoding="utf-8", errors="replace")):
        word, _, rest = line.partition(" ")
        if word.upper() == "FROM":
            return next((w for w in rest.split() if not w.startswith("--")), None)
    return None


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@dataclasses.dataclass
class _DockerfileRead:
    """What the Dockerfile's lines so far give: the mounted folder (the first ``WORKDIR``), the working folder, the
    copies (source in the build context, destination inside), the ENV values, the ``FROM`` lines seen, and what the
    ``RUN`` steps ask of the host (``setup``). Each instruction's method returns the problem that makes the task
    need a container build, or None."""

    env_dir: Path
    setup: HostSetup
    mount: str | None = None
    workdir: str = "/app"
    copies: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    froms: int = 0

    def result(self, problem: str | None) -> tuple[str, str, list[tuple[str, str]], dict[str, str], str | None]:
        return self.mount or self.workdir, self.workdir, self.copies, self.env, problem

    def from_(self, rest: str) -> str | None:
        self.froms += 1
        image = rest.split()[0] if rest.split() else ""
        if self.froms > 1 or " as " in f" {rest.lower()} ":
            return "needs a multi-stage container build"
        return _stand_in(image)

    def workdir_(self, rest: str) -> str | None:
        self.workdir = normalize(self.workdir, rest)
        self.mount = self.mount or self.workdir
        if not _under(self.workdir, self.mount):
            return f"needs a container build (WORKDIR {self.workdir} outside {self.mount})"
        return None

    def env_(self, rest: str) -> str | None:
        try:
            tokens = shlex.split(rest)
        except ValueError:
            return f"cannot read the Dockerfile's ENV {rest!r}"
        if tokens and "=" not in tokens[0]:
            self.env[tokens[0]] = " ".join(tokens[1:])
        else:
            self.env.update(t.partition("=")[::2] for t in tokens if "=" in t)
        return None

    def copy(self, rest: str) -> str | None:
        try:
            args = orjson.loads(rest) if rest.startswith("[") else shlex.split(rest)
        except (ValueError, orjson.JSONDecodeError):
            return f"cannot read the Dockerfile's COPY {rest!r}"
        if any(str(a).startswith("--") for a in args) or len(args) < 2:
            return f"needs a container build (COPY {rest})"
        mount = self.mount = self.mount or self.workdir
        dest = normalize(self.workdir, str(args[-1]))
        if not _under(dest, mount):
            return f"needs a container build (COPY to {dest}, outside {mount})"
        env_dir = self.env_dir
        for src in args[:-1]:
            rel = PurePosixPath(str(src))
            if rel.is_absolute() or ".." in rel.parts or not (env_dir / rel).exists():
                return f"needs a container build (COPY source {src!r})"
            into_dir = str(args[-1]).endswith("/") or len(args) > 2 or (env_dir / rel).is_dir()
            target = dest if (env_dir / rel).is_dir() else (f"{dest}/{rel.name}" if into_dir else dest)
            self.copies.append((rel.as_posix(), target))
        return None

    def run(self, rest: str) -> str | None:
        problem = read_run_step(rest, self.workdir, self.setup)
        return f"needs a container build (RUN {rest[:60]}: {problem})" if problem else None


def read_dockerfile(
    env_dir: Path, setup: HostSetup
) -> tuple[str, str, list[tuple[str, str]], dict[str, str], str | None]:
    """(mounted folder, working folder, [(source in the build context, destination inside)], ENV values, problem).

    The mounted folder is the first ``WORKDIR`` (``/app`` without one): every ``COPY`` and any later ``WORKDIR``
    must stay inside it, since only that folder is the agent's workspace. ``RUN`` steps are folded into ``setup``
    (``backends.host``: host packages checked, pip requirements, folders made) or name the problem.
    """
    read = _DockerfileRead(env_dir, setup)
    steps = {"FROM": read.from_, "WORKDIR": read.workdir_, "ENV": read.env_, "COPY": read.copy, "RUN": read.run}
    text = (env_dir / "Dockerfile").read_text(encoding="utf-8", errors="replace")
    for line in dockerfile_lines(text):
        word, _, rest = line.partition(" ")
        op, rest = word.upper(), rest.strip()
        if op in steps:
            problem = steps[op](rest)
        elif op not in _NO_FILE_CHANGE:
            problem = f"needs a container build (Dockerfile {op} {rest[:80]})"
        else:
            problem = None
        if problem:
            return read.result(problem)
    if read.froms == 0:
        return read.result("the Dockerfile has no FROM")
    return read.result(None)
