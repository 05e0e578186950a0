"""A local, pinned wheel cache: what Harbor tasks' ``pip install`` lines would download, fetched before a run.

Harbor tasks install packages while their image is built (``RUN pip install numpy==1.26.4``) and verifiers often
install their test tools at verify time (``pip install pytest==8.2.2`` in ``tests/test.sh``). Neither may reach a
registry here (a container cannot, and nothing is fetched at verify time), so the requirements are read from the
task's files and downloaded once, on the host, into ``<harnessfit home>/wheels`` (``make setup`` fills it with the
usual verifier tools, ``VERIFIER_TOOLS``, uv among them: ``verifier_tools``). Builds and verifiers then see that folder read-only with
``PIP_NO_INDEX=1`` and ``PIP_FIND_LINKS`` pointing at it (``offline_pip_env``): pip installs from it or fails.
Wheels are for CPython 3.11 on x86-64 Linux (glibc up to 2.36), what the offline Debian bookworm image runs.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from harnessfit.errors import UserError
from harnessfit.paths import file_lock, home

__all__ = [
    "UV_DEFAULT",
    "VERIFIER_TOOLS",
    "WHEELS_INSIDE",
    "pip_requirements",
    "wheel_cache",
    "fetch_wheels",
    "offline_pip_env",
]

UV_DEFAULT = "0.13.9"  # the uv a verifier gets when its test.sh names no version (``verifier_tools``)
# pinned by Harbor task templates: pytest and its ctrf plugin, the uv the template's installer line names (0.9.5) and
# the default uv; colorama because ``uv add``/``uv lock`` resolve for every platform (pytest needs it on Windows)
VERIFIER_TOOLS = (
    "pytest==8.4.1",
    "pytest-json-ctrf==0.3.5",
    "pytest==8.2.2",
    f"uv=={UV_DEFAULT}",
    "uv==0.9.5",
    "colorama==0.4.6",
)
WHEELS_INSIDE = "/hf/wheels"
_PLATFORMS = (
    "manylinux_2_36_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
)
_PIP = re.compile(r"^(?:\S*/)?(?:pip3?(?:\.\d+)?|python3?(?:\.\d+)?\s+-m\s+pip)$")


def wheel_cache() -> Path:
    return home() / "wheels"


def pip_requirements(command: str) -> tuple[list[str], str | None]:
    """The requirements every ``pip install`` of a shell command names, and a problem when one cannot be read
    (a requirements file, an editable or local path, a shell expression)."""
    reqs: list[str] = []
    command = command.replace("\\\n", " ")  # continuation lines are one command
    for part in re.split(r"&&|\|\||;|\||\n", command):
        try:
            words = shlex.split(part)
        except ValueError:
            return reqs, f"cannot read the shell command {part.strip()[:80]!r}"
        for i in range(len(words)):
            head = " ".join(words[i : i + 3]) if words[i].startswith("python") else words[i]
            if not (_PIP.match(head) or _PIP.match(words[i])):
                continue
            rest = words[i + 3 :] if words[i].startswith("python") else words[i + 1 :]
            if not rest or rest[0] != "install":
                break
            redirect = False
            for word in rest[1:]:
                if redirect or re.fullmatch(r"\d*[<>]{1,2}&?\S*", word):  # 2>/dev/null, > log: shell, not pip's
                    redirect = bool(re.fullmatch(r"\d*[<>]{1,2}&?", word))  # the target is the next word
                    continue
                if word in ("-r", "--requirement", "-e", "--editable", "-c", "--constraint"):
                    return reqs, f"pip install {word} (a file of the image) cannot be read ahead"
                if word.startswith("-"):
                    continue
                if "/" in word or word.startswith(".") or "$" in word:
                    return reqs, f"pip install {word!r} is not a registry requirement"
                reqs.append(word)
            break
    return reqs, None


def fetch_wheels(requirements: list[str] | tuple[str, ...]) -> Path:
    """Download each requirement (with its dependencies) into the wheel cache unless a matching wheel is there;
    returns the cache folder. A requirement pip cannot find is a UserError naming it."""
    folder = wheel_cache()
    with file_lock(folder / ".lock"):
        for req in requirements:
            marker = folder / ".fetched" / re.sub(r"[^\w.=<>!~-]", "_", req)
            if marker.exists():
                continue
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--dest",
                str(folder),
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "--implementation",
                "cp",
                "--abi",
                "cp311",
                "--abi",
                "abi3",
                "--abi",
                "none",
                *[a for p in _PLATFORMS for a in ("--platform", p)],
                req,
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=1800)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                raise UserError(f"cannot fetch wheels for {req}: {last[:200]}")
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
    return folder


def offline_pip_env(inside: str = WHEELS_INSIDE) -> dict[str, str]:
    """What makes pip install from the cache alone (a build step's ARGs, a verifier's environment)."""
    return {
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": inside,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_ROOT_USER_ACTION": "ignore",
    }
