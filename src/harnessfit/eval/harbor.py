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
import re
import shutil
import tempfile
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harnessfit.core.jsonio import sha256_bytes
from harnessfit.errors import UserError
from harnessfit.eval.backends.host import HostSetup, StageEnv, stage_env
from harnessfit.eval.caps import Caps
from harnessfit.eval.contained import checker_env, run_contained
from harnessfit.eval.episode import EpisodeFacts
from harnessfit.eval.harbor_dockerfile import base_image, host_python, read_dockerfile
from harnessfit.eval.harbor_verifier import parse_reward, record_not_run, record_verifier, tree_digest
from harnessfit.eval.safefs import copy_into
from harnessfit.eval.sandbox import SANDBOX_HOME, SandboxSpec, sandbox_path
from harnessfit.eval.task import Limits
from harnessfit.eval.verifier_tools import read_test_sh
from harnessfit.eval.wheels import pip_requirements

__all__ = [
    "HARBOR_PREFIX",
    "HarborTask",
    "load_harbor_task",
    "load_harbor_suite",
    "parse_reward",
    "DEFAULT_HARBOR_TURNS",
]

HARBOR_PREFIX = "harbor:"
DEFAULT_HARBOR_TURNS = 30  # Harbor has no turn cap; tasks are longer than the default suite's
_CANARY = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)


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
        self.image = config.environment.docker_image or base_image(self.environment_dir)
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
            read = read_dockerfile(self.environment_dir, self.setup)
            self.mount, self.workdir, self.copies, self.env, problem = read
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
        parts = [
            p.relative_to(self.root).as_posix().encode() + b"\0" + p.read_bytes()
            for p in sorted(self.root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts
        ]
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
        plan = read_test_sh(test_sh, host_python())  # uv and downloads, answered offline (verifier_tools)
        if plan.problem:
            record_not_run(facts, plan.problem)
            return
        stage = stage_env(self.setup, self.mount, ep_dir, "verifier", pip_requirements(test_sh)[0], plan.version)
        spec = SandboxSpec(
            read_write=[(workspace, self.mount), (tests, "/tests"), (logs, "/logs/verifier"), *stage.read_write],
            read_only=list(stage.read_only),
            caps=caps,
        )
        env = {
            **checker_env(SANDBOX_HOME, stage.path(sandbox_path())),
            **stage.env,
            **self.env,
            **self.config.verifier.env,
        }
        (ep_dir / "runner" / "etc").mkdir(parents=True, exist_ok=True)
        code, killed, _, _ = run_contained(
            ["bash", "/tests/test.sh"],
            spec=spec,
            cwd=workspace,
            cwd_inside=self.workdir,
            env=env,
            etc_dir=ep_dir / "runner" / "etc",
            max_seconds=self.config.verifier.timeout_sec,
            max_bytes=1 << 20,
            stdout_file=ep_dir / "checker.txt",
            stderr_file=ep_dir / "checker.stderr.txt",
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
