"""Harbor task folders as an eval suite: ``harnessfit eval agent --suite harbor:DIR``.

A Harbor task (the format of harbor-framework/harbor and Terminal-Bench 2) is a folder::

    instruction.md          the prompt (leading canary comment lines are dropped, as Harbor does)
    task.toml               [agent] timeout_sec, [verifier] timeout_sec + env, [environment] image, resources …
    environment/Dockerfile  how the task's container is built (WORKDIR, COPY …), or [environment] docker_image
    tests/test.sh           the verifier: writes /logs/verifier/reward.txt (one number) or reward.json
    solution/solve.sh       optional reference solution (the oracle)

This machine runs no containers, so a task runs here only when its environment is one the bubblewrap sandbox can
stand in for: a Dockerfile made of ``FROM`` a Python image this host's own Python matches (``python:3…`` for any
Python 3, ``python:3.N…`` for exactly 3.N), ``WORKDIR``, ``COPY`` of the build context into the working folder,
``ENV``, instructions that change no file (``CMD``, ``ENTRYPOINT``, ``EXPOSE``, ``LABEL``, ``ARG``), and ``RUN``
steps the host satisfies (``backends.host``: ``apt-get install`` of packages installed here, ``pip install`` into
an episode virtualenv from the wheel cache, ``mkdir``). Anything else — a ``docker_image``, a compose file, another
``RUN`` step, ``ADD``, ``USER``, a ``COPY`` outside the working folder, GPUs, MCP servers, a health check — makes
the task ``needs_container``: it is reported with the reason, never run, and kept out of every rate (never passed).

One episode: the workspace is seeded from the ``COPY`` instructions and bound at the first ``WORKDIR`` (default
``/app``; every ``COPY`` and later ``WORKDIR`` must stay inside it) in the agent's sandbox, the last ``WORKDIR``
being the agent's working folder; the real Pi runs on ``instruction.md``. The verifier then runs as Harbor's does
(harbor-framework/harbor, ``src/harbor/verifier/verifier.py``, ``Verifier.verify``, which uploads ``tests/`` after
the agent; ``src/harbor/trial/trial.py``): a fresh copy of ``tests/`` is bound at ``/tests`` and a fresh, empty
``/logs/verifier`` (no reward file left from before; the agent never saw either folder, so it cannot plant one),
and ``bash /tests/test.sh`` runs in a sandbox of its own with the checker's isolation (``runner.checker_env``),
the ``ENV`` and ``[environment].env`` values overlaid by ``[verifier].env`` (Harbor passes that to ``exec``), uv
offline from the wheel cache when ``test.sh`` installs or runs it (``verifier_tools``, which names what it cannot
download), and
``task.toml``'s ``[verifier] timeout_sec`` (Harbor's default 600 s; ``[agent] timeout_sec`` bounds the agent, 600 s
when unset where Harbor sets none). The reward is read as Harbor reads it (``harbor_verifier``: ``reward.json``
before ``reward.txt``, every key kept, its ``"reward"`` entry else its only entry the scalar; finite numbers only).
The checker counts as passed only at full reward (1.0), so a complete loop means "checker passed + expected change
+ final response", where the expected change of a Harbor task is "the working folder differs from its seeded
state". The episode records the backend (``host``: this machine's bubblewrap stood in for the image), the image
the task names, and the verifier's output (``facts.verifier``). ``scripted:oracle`` runs ``solution/solve.sh``
through Pi's bash tool with ``solution/`` bound read-only at ``/solution``, as Harbor's oracle agent does.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import shlex
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harnessfit.core.jsonio import sha256_bytes
from harnessfit.errors import UserError
from harnessfit.eval.backends.container_image import dockerfile_lines
from harnessfit.eval.backends.host import HostSetup, StageEnv, normalize, read_run_step, stage_env
from harnessfit.eval.caps import Caps
from harnessfit.eval.episode import EpisodeFacts
from harnessfit.eval.harbor_verifier import parse_reward, record_not_run, record_verifier, tree_digest
from harnessfit.eval.safefs import copy_into
from harnessfit.eval.sandbox import SANDBOX_HOME, SANDBOX_PATH, SandboxSpec, sandbox_path
from harnessfit.eval.task import Limits
from harnessfit.eval.verifier_tools import read_test_sh
from harnessfit.eval.wheels import pip_requirements

__all__ = ["HARBOR_PREFIX", "HarborTask", "load_harbor_task", "load_harbor_suite", "parse_reward",
           "DEFAULT_HARBOR_TURNS"]

HARBOR_PREFIX = "harbor:"
DEFAULT_HARBOR_TURNS = 30  # Harbor has no turn cap; tasks are longer than the default suite's
_CANARY = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)
_NO_FILE_CHANGE = {"CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "ARG", "MAINTAINER", "STOPSIGNAL", "SHELL", "HEALTHCHECK"}


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")  # Harbor adds fields over time; unknown ones are kept, not refused


class _AgentSection(_Open):
    timeout_sec: float | None = Field(default=None, gt=0)


class _VerifierSection(_Open):
    timeout_sec: float = Field(default=600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)


class _EnvironmentSection(_Open):
    docker_image: str | None = None
    gpus: int = 0
    env: dict[str, str] = Field(default_factory=dict)
    mcp_servers: list[Any] = Field(default_factory=list)
    healthcheck: dict[str, Any] | None = None


class _TaskToml(_Open):
    agent: _AgentSection = Field(default_factory=_AgentSection)
    verifier: _VerifierSection = Field(default_factory=_VerifierSection)
    environment: _EnvironmentSection = Field(default_factory=_EnvironmentSection)
    metadata: dict[str, Any] = Field(default_factory=dict)


def strip_canary(text: str) -> str:
    """The instruction without its leading canary comment lines and the blank lines after them."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and _CANARY.match(lines[i].strip()):
        i += 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    return "\n".join(lines[i:])


@functools.lru_cache(maxsize=1)
def _host_python() -> tuple[int, int] | None:
    exe = shutil.which("python3", path=SANDBOX_PATH)
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True,
                             text=True, timeout=30).stdout.split()
        return int(out[0]), int(out[1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None


def _stand_in(image: str) -> str | None:
    """Why the host cannot stand in for base image ``image``, or None when it can (a matching host Python)."""
    m = re.fullmatch(r"(?:docker\.io/)?(?:library/)?python:(3)(?:\.(\d+))?(?:[.\d]*)(?:-[\w.-]+)?", image)
    host = _host_python()
    if m is None:
        return f"needs the container image {image}"
    if host is None:
        return f"needs {image}: no python3 on this host"
    if m.group(2) is not None and int(m.group(2)) != host[1]:
        return f"needs {image}: this host's Python is {host[0]}.{host[1]}"
    return None


def _base_image(env_dir: Path) -> str | None:
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


def _read_dockerfile(env_dir: Path, setup: HostSetup) -> tuple[str, str, list[tuple[str, str]], dict[str, str],
                                                              str | None]:
    """(mounted folder, working folder, [(source in the build context, destination inside)], ENV values, problem).

    The mounted folder is the first ``WORKDIR`` (``/app`` without one): every ``COPY`` and any later ``WORKDIR``
    must stay inside it, since only that folder is the agent's workspace. ``RUN`` steps are folded into
    ``setup`` (``backends.host``: host packages checked, pip requirements, folders made) or name the problem.
    """
    mount, workdir, copies, env = None, "/app", [], {}
    text = (env_dir / "Dockerfile").read_text(encoding="utf-8", errors="replace")
    froms = 0

    def result(problem: str | None) -> tuple[str, str, list[tuple[str, str]], dict[str, str], str | None]:
        return mount or workdir, workdir, copies, env, problem

    for line in dockerfile_lines(text):
        word, _, rest = line.partition(" ")
        op, rest = word.upper(), rest.strip()
        if op == "FROM":
            froms += 1
            image = rest.split()[0] if rest.split() else ""
            if froms > 1 or " as " in f" {rest.lower()} ":
                return result("needs a multi-stage container build")
            problem = _stand_in(image)
            if problem:
                return result(problem)
        elif op == "WORKDIR":
            workdir = normalize(workdir, rest)
            mount = mount or workdir
            if not _under(workdir, mount):
                return result(f"needs a container build (WORKDIR {workdir} outside {mount})")
        elif op == "ENV":
            try:
                tokens = shlex.split(rest)
            except ValueError:
                return result(f"cannot read the Dockerfile's ENV {rest!r}")
            if tokens and "=" not in tokens[0]:
                env[tokens[0]] = " ".join(tokens[1:])
            else:
                env.update(t.split("=", 1) for t in tokens if "=" in t)
        elif op == "COPY":
            try:
                args = orjson.loads(rest) if rest.startswith("[") else shlex.split(rest)
            except (ValueError, orjson.JSONDecodeError):
                return result(f"cannot read the Dockerfile's COPY {rest!r}")
            if any(str(a).startswith("--") for a in args) or len(args) < 2:
                return result(f"needs a container build (COPY {rest})")
            mount = mount or workdir
            dest = normalize(workdir, str(args[-1]))
            if not _under(dest, mount):
                return result(f"needs a container build (COPY to {dest}, outside {mount})")
            for src in args[:-1]:
                rel = PurePosixPath(str(src))
                if rel.is_absolute() or ".." in rel.parts or not (env_dir / rel).exists():
                    return result(f"needs a container build (COPY source {src!r})")
                into_dir = str(args[-1]).endswith("/") or len(args) > 2 or (env_dir / rel).is_dir()
                target = dest if (env_dir / rel).is_dir() else (f"{dest}/{rel.name}" if into_dir else dest)
                copies.append((rel.as_posix(), target))
        elif op == "RUN":
            problem = read_run_step(rest, workdir, setup)
            if problem:
                return result(f"needs a container build (RUN {rest[:60]}: {problem})")
        elif op not in _NO_FILE_CHANGE:
            return result(f"needs a container build (Dockerfile {op} {rest[:80]})")
    if froms == 0:
        return result("the Dockerfile has no FROM")
    return result(None)


class HarborTask:
    """One Harbor task folder, read and checked; ``environment_issue`` says why it needs a container (or None)."""

    kind = "harbor"
    validation_command: str | None = None  # Harbor tasks name none
    reference: list = []  # noqa: RUF012 - never mutated; no scripted reference steps, the oracle is solution/solve.sh

    def __init__(self, root: Path, config: _TaskToml, instruction: str) -> None:
        self.root = root.resolve()
        self.id = root.name
        self.config = config
        self.prompt = instruction
        agent_seconds = config.agent.timeout_sec or 600.0
        self.limits = Limits(max_turns=DEFAULT_HARBOR_TURNS, max_seconds=agent_seconds)
        self.mount, self.workdir, self.copies, self.env = "/app", "/app", [], {}
        self.setup = HostSetup()  # what the Dockerfile's RUN steps ask of the host backend
        # the image the task's environment names: what a container backend runs, or the host stands in for
        self.image = config.environment.docker_image or _base_image(self.environment_dir)
        self.environment_issue = self._environment_issue()

    # -- environment -------------------------------------------------------------------------------------------
    def _environment_issue(self) -> str | None:
        env = self.config.environment
        if env.docker_image:
            return f"needs the container image {env.docker_image}"
        if env.gpus:
            return f"needs {env.gpus} GPU(s) in its container"
        if env.mcp_servers:
            return "needs MCP servers beside its container"
        if env.healthcheck:
            return "needs a health-checked service in its container"
        for name in ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml"):
            if (self.environment_dir / name).exists():
                return f"needs docker compose (environment/{name})"
        for section, values in (("environment", env.env), ("verifier", self.config.verifier.env)):
            if any("${" in v for v in values.values()):
                return f"needs host variables ([{section}] env templates)"
        if (self.environment_dir / "Dockerfile").is_file():
            self.mount, self.workdir, self.copies, self.env, problem = _read_dockerfile(self.environment_dir, self.setup)
            if problem:
                return problem
        self.env.update(env.env)
        return None

    @property
    def environment_dir(self) -> Path:
        return self.root / "environment"

    @property
    def tests_dir(self) -> Path:
        return self.root / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.root / "solution"

    def fingerprint(self) -> str:
        """SHA-256 over every file of the task folder (names + bytes), sorted."""
        parts = [p.relative_to(self.root).as_posix().encode() + b"\0" + p.read_bytes()
                 for p in sorted(self.root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
        return sha256_bytes(b"\1".join(parts))

    # -- an episode --------------------------------------------------------------------------------------------
    def seed_workspace(self, workspace: Path) -> None:
        """Fill the (empty) workspace, mounted at ``mount``, as the Dockerfile's ``COPY`` instructions would."""
        for src, dest in self.copies:
            rel = PurePosixPath(dest).relative_to(self.mount) if dest != self.mount else PurePosixPath(".")
            source = self.environment_dir / src
            target = workspace / rel
            if source.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                copy_into(source, target)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        for folder in self.setup.seed_dirs(self.mount):  # RUN mkdir inside the workspace
            (workspace / PurePosixPath(folder).relative_to(self.mount)).mkdir(parents=True, exist_ok=True)
        if self.workdir != self.mount:  # Docker creates the WORKDIR; so does the seed
            (workspace / PurePosixPath(self.workdir).relative_to(self.mount)).mkdir(parents=True, exist_ok=True)

    def agent_stage(self, ep_dir: Path) -> StageEnv:
        """The agent's environment beyond the workspace: what the Dockerfile's RUN steps ask (``backends.host``)."""
        return stage_env(self.setup, self.mount, ep_dir, "agent")

    def _seed_digest(self) -> str:
        with tempfile.TemporaryDirectory(prefix="hf-harbor-seed-") as tmp:
            self.seed_workspace(Path(tmp))
            return tree_digest(Path(tmp))

    def verify(self, workspace: Path, ep_dir: Path, facts: EpisodeFacts, *, sandboxed: bool = True) -> None:
        """Run ``tests/test.sh`` on the workspace after the agent stopped; fill the checker facts and the reward."""
        from harnessfit.eval.episode_runner import checker_env, run_contained

        if not sandboxed:
            raise UserError("a Harbor task's verifier needs the sandbox (it names /tests and /logs/verifier)")
        facts.expected_change = tree_digest(workspace) != self._seed_digest()
        tests, logs = ep_dir / "tests", ep_dir / "verifier"
        for folder in (tests, logs):  # fresh each time: a reward left from before is never read
            if folder.is_symlink() or folder.is_file():
                folder.unlink()
            elif folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
        copy_into(self.tests_dir, tests)
        caps = dataclasses.replace(Caps.from_limits(self.limits), cpu_seconds=2 * self.config.verifier.timeout_sec)
        test_sh = (self.tests_dir / "test.sh").read_text(encoding="utf-8", errors="replace")
        plan = read_test_sh(test_sh, _host_python())  # uv and downloads, answered offline (verifier_tools)
        if plan.problem:
            record_not_run(facts, plan.problem)
            return
        stage = stage_env(self.setup, self.mount, ep_dir, "verifier", pip_requirements(test_sh)[0], plan.version)
        spec = SandboxSpec(read_write=[(workspace, self.mount), (tests, "/tests"), (logs, "/logs/verifier"),
                                       *stage.read_write], read_only=list(stage.read_only), caps=caps)
        env = {**checker_env(SANDBOX_HOME, stage.path(sandbox_path())), **stage.env, **self.env,
               **self.config.verifier.env}
        (ep_dir / "runner" / "etc").mkdir(parents=True, exist_ok=True)
        code, killed, _, _ = run_contained(
            ["bash", "/tests/test.sh"], spec=spec, cwd=workspace, cwd_inside=self.workdir, env=env,
            etc_dir=ep_dir / "runner" / "etc", max_seconds=self.config.verifier.timeout_sec, max_bytes=1 << 20,
            stdout_file=ep_dir / "checker.txt", stderr_file=ep_dir / "checker.stderr.txt",
        )
        facts.sandbox_policy = {**(facts.sandbox_policy or {}), "checker": {**spec.describe(), **plan.describe()}}
        record_verifier(facts, ep_dir, logs, code, killed, self.config.verifier.timeout_sec)


def load_harbor_task(task_dir: Path) -> HarborTask:
    """Read one Harbor task folder; a one-line UserError names what is missing or malformed."""
    task_dir = Path(task_dir)
    for need in ("instruction.md", "task.toml", "tests/test.sh"):
        if not (task_dir / need).is_file():
            raise UserError(f"{task_dir}: not a Harbor task ({need} missing)")
    spec = task_dir / "task.toml"
    try:
        data = tomllib.loads(spec.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{spec}: not valid TOML: {exc}") from exc
    try:
        config = _TaskToml.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise UserError(f"{spec}: {loc}: {first['msg']} ({exc.error_count()} problem(s))") from exc
    instruction = strip_canary((task_dir / "instruction.md").read_text(encoding="utf-8"))
    if not instruction.strip():
        raise UserError(f"{task_dir / 'instruction.md'}: empty instruction")
    return HarborTask(task_dir, config, instruction)


def load_harbor_suite(suite_dir: Path) -> list[HarborTask]:
    """The Harbor tasks of ``suite_dir`` (a task folder itself, or a folder of task folders), sorted by id."""
    suite_dir = Path(suite_dir)
    if not suite_dir.is_dir():
        raise UserError(f"Harbor suite folder not found: {suite_dir}")
    if (suite_dir / "task.toml").is_file():
        return [load_harbor_task(suite_dir)]
    tasks = [load_harbor_task(p) for p in sorted(suite_dir.iterdir()) if (p / "task.toml").is_file()]
    if not tasks:
        raise UserError(f"{suite_dir}: no Harbor tasks (expected <task>/task.toml sub-folders)")
    return tasks
