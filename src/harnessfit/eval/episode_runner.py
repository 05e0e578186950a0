"""Run one eval episode: the harness's CLI (Pi by default) in a fresh workspace and HOME, under caps and a sandbox.

Per episode: the task's fixture files are copied into a new workspace; the harness (``harness.base.Harness.launch``,
reached through ``get_harness``) writes its config into the HOME seed (pointing at the endpoint) and anything it
needs into the runner folder, and says how to start the agent: the command, its environment, the folders it needs
read-only. Its output is read by threads that count bytes (``eval/contained.py``): past the capture cap the agent
is killed (``runaway``); past the wall-clock cap too (``timeout``). Lines the harness names (events that repeat a whole
partial message) are counted but not stored. The harness stops the agent at the turn cap and says so on stderr
(``TURN_CAP_MARKER``).

Containment (``eval/sandbox.py``): under bubblewrap the agent sees only the system folders, the harness's install,
its workspace and session folder, a tmpfs HOME and /tmp, and reaches nothing on the network but the model endpoint,
through a forwarder; the PID namespace ends every process it started with it. Resource caps (``eval/caps.py``):
every tmpfs is sized, the workspace and session folder are sized tmpfs copied out after the sandbox ended, files,
processes, CPU time and memory are capped; the first cap reached stops the episode (``facts.cap_hit``). Without the sandbox (only on an
explicit ``--no-sandbox``) a subreaper supervisor kills the agent's whole process tree, ``setsid`` children
included.

After the agent stopped, the expected-change predicates are evaluated and the checker's files copied in without
following any link the agent left (``eval/safefs.py``); the checker then runs in a sandbox of its own with a
fresh HOME, no network and an isolated Python environment (``checker_env``), so nothing the agent wrote into
HOME, PATH or the Python search path can make it pass.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessfit.eval.backends.host import StageEnv
from harnessfit.eval.caps import Caps, CapWatch, check_seed_fits, collect, prune_large_files
from harnessfit.eval.contained import checker_env, host_path_without, run_contained
from harnessfit.eval.episode import EpisodeFacts
from harnessfit.eval.harbor import HarborTask
from harnessfit.eval.safefs import copy_into
from harnessfit.eval.sandbox import (
    RUNNER_DIR,
    SANDBOX_HOME,
    EndpointForwarder,
    SandboxSpec,
    sandbox_path,
    sandbox_status,
    write_launcher,
)
from harnessfit.eval.task import Task
from harnessfit.harness.base import TURN_CAP_MARKER, EpisodeSetup, Harness, Launch, get_harness
from harnessfit.harness.versions import parse_harness

__all__ = [
    "Endpoint",
    "run_checker",
    "run_episode",
    "run_contained",
    "checker_env",
    "TURN_CAP_MARKER",
    "episode_dirname",
    "NO_SANDBOX",
]

NO_SANDBOX = "none: disabled by --no-sandbox"


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint the harness talks to: a scripted one, ``harnessfit serve``, or anything else."""

    base_url: str
    model_id: str
    name: str = ""
    context_window: int | None = None  # the served model's window, written into the harness's config when known
    api_key: str | None = None  # the key the harness sends (a capturing server files the episode's turns under it)

    @property
    def label(self) -> str:
        return self.name or self.model_id


def episode_dirname(task_id: str, seed: int) -> str:
    return f"episodes/{task_id}/seed-{seed}"


@dataclass(frozen=True)
class _Folders:
    """Where one episode's files are: on the host, and (``mount``, ``inside_ws``, ``home``) as the agent sees them."""

    ep_dir: Path
    workspace: Path
    sessions: Path
    runner: Path
    seed_home: Path  # the harness writes its config into it (Pi: .pi/agent)
    mount: str  # where the workspace is inside the sandbox
    inside_ws: str  # the agent's working folder there
    home: str


def _not_runnable(task: Task, harbor: HarborTask | None, *, sandbox: bool, status: str) -> tuple[str, str] | None:
    """(status, error) of an episode that must not run here, else None."""
    if harbor is not None and harbor.environment_issue is not None:
        return "needs_container", harbor.environment_issue
    if sandbox and status != "bwrap":
        return "error", f"sandbox requested but unavailable ({status}); not run unsandboxed"
    if harbor is not None and not sandbox:
        return "error", "a Harbor task needs the sandbox (it names /app, /tests, /logs)"
    return None


def _make_folders(task: Task, harbor: HarborTask | None, ep_dir: Path, caps: Caps, *, sandbox: bool) -> _Folders:
    """A fresh episode folder with the task's workspace seeded (sandboxed: the seed of the workspace tmpfs)."""
    if ep_dir.exists():
        shutil.rmtree(ep_dir)
    workspace, sessions, runner = ep_dir / "workspace", ep_dir / "sessions", ep_dir / "runner"
    seed_ws = runner / "workspace" if sandbox else workspace  # sandboxed: seeds the workspace tmpfs
    for d in (workspace, sessions, seed_ws, runner / "etc", runner / "endpoint"):
        d.mkdir(parents=True, exist_ok=True)
    if harbor is not None:
        harbor.seed_workspace(seed_ws)
    else:
        copy_into(task.workspace_dir, seed_ws)
    check_seed_fits(seed_ws, caps)
    seed_home = runner / "home" if sandbox else ep_dir / "home"
    folders = _Folders(
        ep_dir,
        workspace,
        sessions,
        runner,
        seed_home,
        mount=harbor.mount if harbor is not None else str(workspace),
        inside_ws=harbor.workdir if harbor is not None else str(workspace),
        home=SANDBOX_HOME if sandbox else str(ep_dir / "home"),
    )
    seed_home.mkdir(parents=True, exist_ok=True)
    return folders


def _sandboxed(
    cmd: list[str],
    folders: _Folders,
    launch: Launch,
    env: dict[str, str],
    forwarder: EndpointForwarder,
    caps: Caps,
    *,
    out_bytes: int,
    solution: Path | None,
    stage: StageEnv,
) -> tuple[list[str], SandboxSpec, CapWatch]:
    """The launcher command running ``cmd``, the sandbox and the cap watch of a sandboxed agent (``env`` gets the
    sandbox's PATH and ``stage``'s environment: a Harbor task's RUN steps done on the host); ``solution`` is bound
    read-only at ``/solution`` when given."""
    env.update(stage.env)
    env["PATH"], env["TMPDIR"] = stage.path(sandbox_path()), "/tmp"
    env.pop("NODE_OPTIONS", None)  # may name host files the sandbox does not have
    read_only: list[Any] = [*launch.read_only, (forwarder.folder, f"{RUNNER_DIR}/endpoint"), *stage.read_only]
    if solution is not None:
        read_only.append((solution, "/solution"))
    mount, sessions = folders.mount, folders.sessions
    spec = SandboxSpec(
        read_only=read_only,
        read_write=list(stage.read_write),
        runner_dir=folders.runner,
        hosts=[h for h in [forwarder.hostname] if h],
        forward=(forwarder.listen_host, forwarder.port, forwarder.socket_path, f"{forwarder.host}:{forwarder.port}"),
        caps=caps,
        captured=[(mount, caps.workspace_bytes), (str(sessions), max(2 * out_bytes, 16 << 20))],
    )
    watch = CapWatch(
        caps,
        {"workspace": mount, "sessions": str(sessions), "/tmp": "/tmp", "HOME": SANDBOX_HOME, "/dev/shm": "/dev/shm"},
        probe=(write_launcher(folders.runner), f"{RUNNER_DIR}/launch.mjs"),
    )
    node = str(Path(shutil.which("node") or "node").resolve())
    cmd = [
        node,
        f"{RUNNER_DIR}/launch.mjs",
        f"{RUNNER_DIR}/endpoint/model.sock",
        forwarder.listen_host,
        str(forwarder.port),
        f"{RUNNER_DIR}/home",
        SANDBOX_HOME,
        f"{RUNNER_DIR}/workspace",
        mount,
        folders.inside_ws,
        *cmd,
    ]
    return cmd, spec, watch


def _agent_failed(
    facts: EpisodeFacts,
    agent: Harness,
    folders: _Folders,
    run_dir: Path,
    spec: SandboxSpec | None,
    result: tuple[int | None, str | None, int, float],
) -> bool:
    """Record how the agent's run ended in ``facts``; True (and ``status="error"``) when it failed to run."""
    code, killed, used, wall = result
    stderr = (folders.ep_dir / "stderr.txt").read_text(encoding="utf-8", errors="replace")
    facts.pi_exit_code, facts.killed, facts.output_bytes = code, (None if killed == "cap" else killed), used
    facts.wall_seconds = round(wall, 3)
    facts.turn_cap_hit = TURN_CAP_MARKER in stderr
    found = agent.session_file(folders.sessions)
    facts.session_file = found.relative_to(run_dir.resolve()).as_posix() if found is not None else None
    facts.sandbox_policy = {"agent": spec.describe()} if spec is not None else None
    if killed is None and code != 0:
        tail = " | ".join(stderr.strip().splitlines()[-3:]) or "no stderr"
        facts.status, facts.error = "error", f"{agent.name} exited with code {code}: {tail}"[:2000]
        return True
    if killed is None and (why := agent.started(folders.ep_dir / "events.jsonl")) is not None:
        facts.status, facts.error = "error", why
        return True
    return False


def _run_agent(
    task: Task,
    folders: _Folders,
    launch: Launch,
    endpoint: Endpoint,
    caps: Caps,
    facts: EpisodeFacts,
    *,
    sandbox: bool,
    solution: Path | None,
    max_seconds: float | None,
    max_output_bytes: int | None,
) -> tuple[tuple[int | None, str | None, int, float], SandboxSpec | None]:
    """Run the agent's command under the caps (sandboxed: behind the endpoint forwarder, closed when it ended) and
    collect the folders it wrote; returns ``run_contained``'s result and the sandbox it ran in."""
    cmd, env = list(launch.cmd), dict(launch.env)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    spec: SandboxSpec | None = None
    inside_ws = folders.inside_ws
    with contextlib.ExitStack() as stack:
        if sandbox:
            forwarder = stack.enter_context(EndpointForwarder(endpoint.base_url))
            stage = task.agent_stage(folders.ep_dir) if isinstance(task, HarborTask) else StageEnv()
            cmd, spec, watch = _sandboxed(
                cmd,
                folders,
                launch,
                env,
                forwarder,
                caps,
                solution=solution,
                out_bytes=max_output_bytes or task.limits.max_output_bytes,
                stage=stage,
            )
            inside_ws = folders.mount  # bwrap starts in the (still empty) workspace tmpfs; the launcher seeds it
        else:
            (folders.ep_dir / "home" / "tmp").mkdir(parents=True)
            env["TMPDIR"] = str(folders.ep_dir / "home" / "tmp")
            watch = CapWatch(caps)  # unsandboxed: the runner-side caps only (processes, CPU seconds)
        try:
            result = run_contained(
                cmd,
                spec=spec,
                cwd=folders.workspace,
                cwd_inside=inside_ws,
                env=env,
                etc_dir=folders.runner / "etc",
                max_seconds=max_seconds or task.limits.max_seconds,
                max_bytes=max_output_bytes or task.limits.max_output_bytes,
                stdout_file=folders.ep_dir / "events.jsonl",
                stderr_file=folders.ep_dir / "stderr.txt",
                watch=watch,
                skip_lines=launch.skip_lines,
            )
            collect(watch, folders.workspace, folders.sessions, facts)
        finally:
            watch.close()
    return result, spec


def run_episode(
    task: Task,
    seed: int,
    endpoint: Endpoint,
    run_dir: Path,
    *,
    harness: str | None = None,
    sandbox: bool = True,
    tools: Sequence[str] | None = None,
    max_turns: int | None = None,
    max_seconds: float | None = None,
    max_output_bytes: int | None = None,
    expose_solution: bool = False,
) -> EpisodeFacts:
    """Run ``task`` once against ``endpoint``; files go to ``run_dir/episodes/<task>/seed-<seed>/``.

    Never raises for a failing agent; a runner/harness problem becomes ``status="error"`` (unscored). With
    ``sandbox=True`` and no working bubblewrap the episode is an error: it never runs unsandboxed.
    ``expose_solution`` (Harbor oracle runs) binds the task's ``solution/`` read-only at ``/solution``.
    ``harness``: the spec of the harness that runs the agent (``pi@VERSION``; default: the default harness).
    """
    rel = episode_dirname(task.id, seed)
    turns = max_turns or task.limits.max_turns
    status = sandbox_status() if sandbox else NO_SANDBOX
    facts = EpisodeFacts(
        task_id=task.id,
        seed=seed,
        sandbox=status,
        max_turns=turns,
        events_file=f"{rel}/events.jsonl",
        stderr_file=f"{rel}/stderr.txt",
    )
    harbor = task if isinstance(task, HarborTask) else None
    facts.image = harbor.image if harbor is not None else None
    if (refused := _not_runnable(task, harbor, sandbox=sandbox, status=status)) is not None:
        facts.status, facts.error = refused
        return facts
    facts.backend = "host" if harbor is not None else None  # bubblewrap on this machine stands in for the image
    try:
        caps = Caps.from_limits(task.limits)
        folders = _make_folders(task, harbor, (run_dir / rel).resolve(), caps, sandbox=sandbox)
        agent = get_harness(harness)
        launch = agent.launch(
            parse_harness(harness)[1],
            EpisodeSetup(
                endpoint.base_url,
                endpoint.model_id,
                task.prompt,
                home=folders.seed_home,
                home_inside=folders.home,
                runner=folders.runner,
                runner_inside=RUNNER_DIR if sandbox else str(folders.runner),
                session_dir=folders.sessions,
                tools=tools,
                max_turns=turns,
                context_window=endpoint.context_window,
                api_key=endpoint.api_key,
            ),
        )
        solution = harbor.solution_dir if expose_solution and harbor is not None else None
        result, spec = _run_agent(
            task,
            folders,
            launch,
            endpoint,
            caps,
            facts,
            sandbox=sandbox,
            solution=solution,
            max_seconds=max_seconds,
            max_output_bytes=max_output_bytes,
        )
        if _agent_failed(facts, agent, folders, run_dir, spec, result):
            return facts
        if harbor is not None:
            harbor.verify(folders.workspace, folders.ep_dir, facts, sandboxed=sandbox)
        else:
            _check(task, folders.workspace, folders.ep_dir, facts, sandboxed=sandbox)
        facts.pruned += prune_large_files(folders.workspace)  # the run folder keeps what a report needs
    except Exception as exc:  # noqa: BLE001 - any runner failure is recorded as an unscored episode
        facts.status, facts.error = "error", f"{type(exc).__name__}: {exc}"[:2000]
    return facts


def _check(task: Task, workspace: Path, ep_dir: Path, facts: EpisodeFacts, *, sandboxed: bool) -> None:
    """Expected change, then the checker's files copied in (no link followed) and the checker run, isolated."""
    facts.expected_change = all(change.holds(workspace) for change in task.expected_change)
    code, out, policy = run_checker(task, workspace, ep_dir, sandboxed=sandboxed)
    if policy is not None:
        facts.sandbox_policy = {**(facts.sandbox_policy or {}), "checker": policy}
    facts.checker_exit_code = code
    facts.checker_output = out


def run_checker(
    task: Task, workspace: Path, ep_dir: Path, *, sandboxed: bool
) -> tuple[int | None, str, dict[str, Any] | None]:
    """Copy the task's checker files into ``workspace`` (no link followed) and run its checker there, isolated: in
    the sandbox with no network (``sandboxed``), else on the host with a scratch HOME and a PATH without ``ep_dir``.
    Returns the exit code (-1 when killed at a cap), the last 2,000 characters of its output, and the sandbox policy
    it ran under (None on the host). Output files: ``ep_dir/checker.txt`` and ``checker.stderr.txt``."""
    copy_into(task.checker_dir, workspace)
    check = ["bash", "-c", task.checker.command]
    scratch, policy = None, None
    try:
        if sandboxed:
            spec = SandboxSpec(read_write=[workspace], caps=Caps.from_limits(task.limits))  # no network at all
            env = checker_env(SANDBOX_HOME, sandbox_path())
            policy = spec.describe()
        else:
            spec = None
            scratch = Path(tempfile.mkdtemp(prefix="hf-checker-home-"))
            env = checker_env(str(scratch), host_path_without(ep_dir))
            env["TMPDIR"] = str(scratch)
        ccode, ckilled, _, _ = run_contained(
            check,
            spec=spec,
            cwd=workspace,
            env=env,
            etc_dir=ep_dir / "runner" / "etc",
            max_seconds=task.checker.timeout_s,
            max_bytes=1 << 20,
            stdout_file=ep_dir / "checker.txt",
            stderr_file=ep_dir / "checker.stderr.txt",
        )
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    out = (ep_dir / "checker.txt").read_text(errors="replace") + (ep_dir / "checker.stderr.txt").read_text(
        errors="replace"
    )
    return (ccode if ckilled is None else -1), out[-2000:], policy
