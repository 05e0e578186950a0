"""The image a Harbor task runs in under the container backend: its ``docker_image`` when the engine's store has
it (nothing is pulled), else its ``environment/Dockerfile`` built offline.

Harbor builds ``environment/Dockerfile`` with ``environment/`` as the build context (harbor-framework/harbor,
``src/harbor/environments/docker/docker.py``, the compose build of the task's environment folder). Here the first
``FROM`` is answered by the offline-made image (``images.PYTHON_IMAGE``, Debian bookworm + Python 3.11 + pip) when
``images.stand_in`` allows — the results say so — and every ``pip install`` the ``RUN`` steps name is fetched on the
host into the pinned wheel cache first (``wheels``), which the build sees read-only with pip told to use it alone
(build ``ARG``s, so nothing of it stays in the image). ``apt-get`` in a ``RUN`` reaches the Debian mirror as the
build's network allows. Built images are tagged by the task folder's fingerprint and kept.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harnessfit.eval.images import PYTHON_IMAGE, ContainerEngine, ensure_python_image, image_exists, stand_in
from harnessfit.eval.wheels import WHEELS_INSIDE, fetch_wheels, offline_pip_env, pip_requirements

__all__ = ["TaskImage", "prepare_image", "dockerfile_lines", "image_path"]


@dataclass(frozen=True)
class TaskImage:
    """The image an episode runs in, the working folder it starts in, and what stood in for what (or None)."""

    image: str
    workdir: str
    note: str | None = None

    def describe(self) -> str:
        return f"{self.image} ({self.note})" if self.note else self.image


def dockerfile_lines(text: str) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments and blank lines dropped."""
    out, current = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        out.append(current + line)
        current = ""
    if current.strip():
        out.append(current)
    return out


def _rewrite(text: str) -> tuple[str, str, list[str]] | str:
    """(the Dockerfile with its FROM answered by the offline image, the FROM it named, every pip requirement of its
    RUN steps), or why it cannot be built here."""
    lines, base, reqs = dockerfile_lines(text), None, []
    out: list[str] = []
    for line in lines:
        word, _, rest = line.partition(" ")
        op = word.upper()
        if op == "FROM":
            if base is not None or re.search(r"\sas\s", f" {rest} ", re.IGNORECASE):
                return "needs a multi-stage build (not supported offline)"
            base = next((w for w in rest.split() if not w.startswith("--")), "")
            problem = stand_in(base)
            if problem:
                return problem
            out.append(f"FROM {PYTHON_IMAGE}")
            out += [f"ARG {k}={v}" for k, v in offline_pip_env().items()]
            continue
        if op == "RUN":
            found, problem = pip_requirements(rest)
            if problem:
                return f"RUN {rest[:80]}: {problem}"
            reqs += found
        out.append(line)
    if base is None:
        return "the Dockerfile has no FROM"
    return "\n".join(out) + "\n", base, reqs


def image_path(engine: ContainerEngine, image: str) -> str:
    """The PATH the image sets (Docker's default when it sets none)."""
    proc = subprocess.run(
        engine.cmd("image", "inspect", "--format", "{{json .Config.Env}}", image),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    try:
        env = json.loads(proc.stdout or "null") or []
    except json.JSONDecodeError:
        env = []
    found = [e[5:] for e in env if isinstance(e, str) and e.startswith("PATH=")]
    return found[0] if found else "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _workdir(engine: ContainerEngine, image: str) -> str:
    proc = subprocess.run(
        engine.cmd("image", "inspect", "--format", "{{.Config.WorkingDir}}", image),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    return proc.stdout.strip() or "/"


def prepare_image(task, engine: ContainerEngine) -> TaskImage | str:
    """The task's image, built when needed; a string says why the task cannot run on this backend."""
    named = task.config.environment.docker_image
    if named:
        if not image_exists(engine.exe, named):
            return f"needs the container image {named} (not in the local {engine.name} store; nothing is pulled)"
        return TaskImage(named, _workdir(engine, named))
    dockerfile = task.environment_dir / "Dockerfile"
    if not dockerfile.is_file():
        return "no environment/Dockerfile and no [environment] docker_image"
    rewritten = _rewrite(dockerfile.read_text(encoding="utf-8", errors="replace"))
    if isinstance(rewritten, str):
        return rewritten
    text, base, reqs = rewritten
    tag = f"localhost/harnessfit-harbor-{re.sub(r'[^a-z0-9_.-]', '-', task.id.lower())}:{task.fingerprint()[:16]}"
    note = f"FROM {base} stood in by {PYTHON_IMAGE}, made offline from Debian packages"
    if image_exists(engine.exe, tag):
        return TaskImage(tag, _workdir(engine, tag), note)
    ensure_python_image(engine)
    wheels = fetch_wheels(reqs)
    with tempfile.TemporaryDirectory(prefix="hf-harbor-build-") as tmp:
        context = Path(tmp) / "context"
        shutil.copytree(task.environment_dir, context, symlinks=True)
        (context / "Dockerfile.harnessfit").write_text(text, encoding="utf-8")
        proc = subprocess.run(
            engine.cmd(
                "build",
                *engine.build_flags,
                "--volume",
                f"{wheels}:{WHEELS_INSIDE}:ro",
                "-f",
                str(context / "Dockerfile.harnessfit"),
                "-t",
                tag,
                str(context),
            ),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=3600,
        )
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        return f"the image build failed: {tail[:400]}"
    return TaskImage(tag, _workdir(engine, tag), note)
