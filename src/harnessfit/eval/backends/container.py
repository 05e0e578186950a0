"""The container backend: one Harbor episode in a podman (or docker) container, Pi running inside it.

The agent's container (``_agent``) is made from the task's image (``container_image.prepare_image``) with no
network at all (``--network none``; with ``[environment] allow_internet = true`` the engine's default network);
the model endpoint is reached as under bubblewrap: the host's ``EndpointForwarder`` unix socket is bound
read-only at ``/hf/endpoint`` and the sandbox launcher (``sandbox.LAUNCHER_JS``) listens on the endpoint's
address inside the container and pipes each connection to it. Node (``/hf/bin/node``) and the installed Pi (at
its own host path) are bound read-only; Pi's HOME seed is ``/hf/home`` and its session folder the host path it
is written to. The working folder (the image's ``WORKDIR``) is copied out before and after the agent ran: what
it changed is the episode's expected change, and what the verifier sees. Caps: the wall clock and the output
cap as on the host backend; the task's memory (no extra swap) and process caps as ``--memory``/``--pids-limit``
where the engine enforces them here (``ContainerEngine.limits``, probed: a cgroup setup may refuse them); the
episode's policy records which caps held.

The verifier follows Harbor's order (harbor-framework/harbor, ``src/harbor/verifier/verifier.py``
``Verifier.verify``; ``src/harbor/trial/trial.py`` runs it after the agent stopped): ``tests/`` is put at
``/tests`` only now, ``/logs/verifier`` starts empty (no reward file from before), ``bash /tests/test.sh`` runs
in the working folder with ``[verifier].env`` and ``[verifier] timeout_sec``, and the reward is read as Harbor
reads it (``harbor_verifier``). Unlike Harbor, the verifier runs in a fresh container of the same image with the
agent's working folder bound in — not in the agent's own container — so nothing the agent left outside its
working folder in system paths (a planted ``python3`` or ``pytest`` on PATH, a site-packages hook) is what it is
scored from; what it changed elsewhere (``/output``, ``/tmp``) is carried into the verifier's container before it
starts (``carry``, which says what is and is not carried, and why). pip in the verifier installs from the pinned
wheel cache only (``wheels``), never from the network; uv, when ``test.sh`` installs or names it, is the pinned
one at ``/root/.local/bin``, kept offline (``verifier_tools``).
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

from harnessfit.eval.backends.carry import carry_in, carry_out
from harnessfit.eval.backends.container_image import TaskImage, image_path, prepare_image
from harnessfit.eval.caps import Caps
from harnessfit.eval.episode import EpisodeFacts
from harnessfit.eval.episode_runner import Endpoint, episode_dirname, run_contained
from harnessfit.eval.harbor_verifier import record_not_run, record_verifier, tree_digest
from harnessfit.eval.images import BASE_PYTHON, ContainerEngine
from harnessfit.eval.safefs import copy_into
from harnessfit.eval.sandbox import EndpointForwarder, write_launcher
from harnessfit.eval.verifier_tools import INSTALLER_BIN, read_test_sh, uv_bin, uv_env
from harnessfit.eval.wheels import VERIFIER_TOOLS, WHEELS_INSIDE, fetch_wheels, offline_pip_env, pip_requirements
from harnessfit.harness.base import TURN_CAP_MARKER, EpisodeSetup, get_harness
from harnessfit.harness.versions import parse_harness

__all__ = ["run_container_episode"]

HOME_INSIDE, RUNNER_INSIDE, ENDPOINT_INSIDE, NODE_INSIDE = "/hf/home", "/hf/runner", "/hf/endpoint", "/hf/bin/node"
UV_INSIDE = f"/root/{INSTALLER_BIN}"  # the verifier runs as the image's user: root in Harbor's images
_PATH = "/hf/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _engine(engine: ContainerEngine, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(engine.cmd(*args), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout)


def _copy_out(engine: ContainerEngine, name: str, folder: str, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    proc = _engine(engine, "cp", f"{name}:{folder.rstrip('/')}/.", str(dest))
    if proc.returncode != 0:
        raise RuntimeError(f"{engine.name} cp {folder} out failed: {proc.stderr.strip()[-300:]}")


def _network(task) -> tuple[list[str], str]:
    if getattr(task.config.environment, "allow_internet", False) is True:
        return [], "the engine's default network ([environment] allow_internet = true) + the model endpoint"
    return ["--network", "none"], "none but the model endpoint (forwarded over a unix socket)"


def run_container_episode(
    task,
    seed: int,
    endpoint: Endpoint,
    run_dir: Path,
    *,
    engine: ContainerEngine,
    harness: str | None = None,
    tools: Any = None,
    max_turns: int | None = None,
    max_seconds: float | None = None,
    max_output_bytes: int | None = None,
    expose_solution: bool = False,
) -> EpisodeFacts:
    """Run a Harbor ``task`` once in a container against ``endpoint``; files go where ``run_episode`` puts them.
    Never raises for a failing agent: a runner problem is an unscored ``error``, an unbuildable task
    ``needs_container`` with the reason."""
    rel = episode_dirname(task.id, seed)
    ep_dir = (run_dir / rel).resolve()
    turns = max_turns or task.limits.max_turns
    facts = EpisodeFacts(
        task_id=task.id,
        seed=seed,
        sandbox=f"container ({engine.name})",
        max_turns=turns,
        events_file=f"{rel}/events.jsonl",
        stderr_file=f"{rel}/stderr.txt",
    )
    facts.backend, facts.image = engine.name, task.image
    try:
        prepared = prepare_image(task, engine)
        if isinstance(prepared, str):
            facts.status, facts.error = "needs_container", prepared
            return facts
        facts.image = prepared.describe()
        if ep_dir.exists():
            shutil.rmtree(ep_dir)
        _agent(
            task,
            prepared,
            endpoint,
            ep_dir,
            run_dir,
            facts,
            engine=engine,
            harness=harness,
            tools=tools,
            turns=turns,
            max_seconds=max_seconds or task.limits.max_seconds,
            max_bytes=max_output_bytes or task.limits.max_output_bytes,
            expose_solution=expose_solution,
        )
        if facts.status == "success":
            _verify(task, prepared, ep_dir, facts, engine)
    except Exception as exc:  # noqa: BLE001 - any runner failure is recorded as an unscored episode
        facts.status, facts.error = "error", f"{type(exc).__name__}: {exc}"[:2000]
    return facts


def _agent(
    task,
    prepared: TaskImage,
    endpoint: Endpoint,
    ep_dir: Path,
    run_dir: Path,
    facts: EpisodeFacts,
    *,
    engine: ContainerEngine,
    harness: str | None,
    tools: Any,
    turns: int,
    max_seconds: float,
    max_bytes: int,
    expose_solution: bool,
) -> None:
    sessions, runner, seed_dir = ep_dir / "sessions", ep_dir / "runner", ep_dir / "runner" / "home"
    caps = Caps.from_limits(task.limits)  # memory and processes: cap_flags, where the engine enforces them
    for d in (sessions, seed_dir, runner / "etc"):
        d.mkdir(parents=True, exist_ok=True)
    agent = get_harness(harness)
    launch = agent.launch(
        parse_harness(harness)[1],
        EpisodeSetup(
            endpoint.base_url,
            endpoint.model_id,
            task.prompt,
            home=seed_dir,
            home_inside=HOME_INSIDE,
            runner=runner,
            runner_inside=RUNNER_INSIDE,
            session_dir=sessions,
            tools=tools,
            max_turns=turns,
            context_window=endpoint.context_window,
            api_key=endpoint.api_key,
        ),
    )
    write_launcher(runner)
    node = str(Path(shutil.which("node") or "node").resolve())
    name = f"hf-harbor-{uuid.uuid4().hex[:12]}"
    network, policy = _network(task)
    with EndpointForwarder(endpoint.base_url) as fwd:
        mounts = [
            f"{node}:{NODE_INSIDE}:ro",
            f"{runner}:{RUNNER_INSIDE}:ro",
            f"{fwd.folder}:{ENDPOINT_INSIDE}:ro",
            f"{seed_dir}:{HOME_INSIDE}",
            f"{sessions}:{sessions}",
            *[f"{p}:{p}:ro" for p in launch.read_only],
        ]
        if expose_solution:
            mounts.append(f"{task.solution_dir.resolve()}:/solution:ro")
        env = {**launch.env, "PATH": _PATH, "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}
        inner = [
            NODE_INSIDE,
            f"{RUNNER_INSIDE}/launch.mjs",
            f"{ENDPOINT_INSIDE}/model.sock",
            fwd.listen_host,
            str(fwd.port),
            "-",
            "-",
            "-",
            "-",
            prepared.workdir,
            *launch.cmd,
        ]
        create = [
            "create",
            "--name",
            name,
            *engine.run_flags,
            *engine.cap_flags(caps.memory_bytes, caps.processes),
            *network,
            "-w",
            prepared.workdir,
            *[a for m in mounts for a in ("-v", m)],
            *[a for k, v in env.items() for a in ("-e", f"{k}={v}")],
            *([f"--add-host={fwd.hostname}:{fwd.listen_host}"] if fwd.hostname else []),
            prepared.image,
            "bash",
            "-c",
            'echo go | exec "$@"',
            "harnessfit",
            *inner,
        ]
        proc = _engine(engine, *create)
        if proc.returncode != 0:
            facts.status, facts.error = "error", f"{engine.name} create failed: {proc.stderr.strip()[-500:]}"
            return
        try:
            _copy_out(engine, name, prepared.workdir, runner / "seed")
            code, killed, used, wall = run_contained(
                [engine.exe, "start", "-a", name],
                spec=None,
                cwd=ep_dir,
                env=_host_env(),
                etc_dir=runner / "etc",
                max_seconds=max_seconds,
                max_bytes=max_bytes,
                stdout_file=ep_dir / "events.jsonl",
                stderr_file=ep_dir / "stderr.txt",
                skip_lines=launch.skip_lines,
            )
            _engine(engine, "stop", "-t", "2", name)
            _copy_out(engine, name, prepared.workdir, ep_dir / "workspace")
            carried = carry_out(
                engine, name, [prepared.workdir, *[m.split(":")[1] for m in mounts]], ep_dir / "outside"
            )
        finally:
            _engine(engine, "rm", "-f", name)
    facts.sandbox_policy = {
        "agent": {
            "backend": engine.name,
            "image": prepared.image,
            "network": policy,
            "read_only": [m.split(":")[1] for m in mounts if m.endswith(":ro")],
            "caps": engine.enforced_caps(caps.memory_bytes, caps.processes),
            "to the verifier": carried,
        }
    }
    stderr = (ep_dir / "stderr.txt").read_text(encoding="utf-8", errors="replace")
    facts.pi_exit_code, facts.killed, facts.output_bytes = code, killed, used
    facts.wall_seconds, facts.turn_cap_hit = round(wall, 3), TURN_CAP_MARKER in stderr
    found = agent.session_file(sessions)
    facts.session_file = found.relative_to(run_dir.resolve()).as_posix() if found is not None else None
    facts.expected_change = tree_digest(ep_dir / "workspace") != tree_digest(runner / "seed")
    if killed is None and code != 0:
        tail = " | ".join(stderr.strip().splitlines()[-3:]) or "no stderr"
        facts.status, facts.error = "error", f"{agent.name} exited with code {code}: {tail}"[:2000]
    elif killed is None and (why := agent.started(ep_dir / "events.jsonl")) is not None:
        facts.status, facts.error = "error", why


def _host_env() -> dict[str, str]:
    import os

    return {
        k: v
        for k, v in os.environ.items()
        if k in ("PATH", "HOME", "XDG_RUNTIME_DIR", "LANG", "TMPDIR", "CONTAINERS_CONF", "DOCKER_HOST")
    }


def _verify(task, prepared: TaskImage, ep_dir: Path, facts: EpisodeFacts, engine: ContainerEngine) -> None:
    """``tests/test.sh`` in a fresh container of the image, the agent's working folder bound in (Harbor's order)."""
    caps = Caps.from_limits(task.limits)
    tests, logs = ep_dir / "tests", ep_dir / "verifier"
    for folder in (tests, logs):
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
    copy_into(task.tests_dir, tests)
    test_sh = (task.tests_dir / "test.sh").read_text(encoding="utf-8", errors="replace")
    plan = read_test_sh(test_sh, BASE_PYTHON if prepared.note else None)  # the stand-in image's Python is known
    if plan.problem:
        record_not_run(facts, plan.problem)
        return
    wheels = fetch_wheels([*VERIFIER_TOOLS, *pip_requirements(test_sh)[0]])  # before the verifier starts
    timeout = task.config.verifier.timeout_sec
    env = {**offline_pip_env(), **task.env, **task.config.environment.env, **task.config.verifier.env}
    uv_mount: list[str] = []
    if plan.version is not None:  # where astral's installer puts uv for root, on PATH, offline (verifier_tools)
        uv_mount = ["-v", f"{uv_bin(plan.version)}:{UV_INSIDE}:ro"]
        env = {**uv_env(WHEELS_INSIDE, "python3"), "PATH": f"{UV_INSIDE}:{image_path(engine, prepared.image)}", **env}
    name = f"hf-harbor-verify-{uuid.uuid4().hex[:12]}"
    create = [
        "create",
        "--name",
        name,
        *engine.run_flags,
        *engine.cap_flags(caps.memory_bytes, caps.processes),
        "--network",
        "none",
        "-w",
        prepared.workdir,
        "-v",
        f"{ep_dir / 'workspace'}:{prepared.workdir}",
        "-v",
        f"{tests}:/tests",
        "-v",
        f"{logs}:/logs/verifier",
        "-v",
        f"{wheels}:{WHEELS_INSIDE}:ro",
        *uv_mount,
        *[a for k, v in env.items() for a in ("-e", f"{k}={v}")],
        prepared.image,
        "bash",
        "/tests/test.sh",
    ]
    try:
        proc = _engine(engine, *create)
        if proc.returncode != 0:
            raise RuntimeError(f"{engine.name} create (verifier) failed: {proc.stderr.strip()[-300:]}")
        carry_in(engine, name, ep_dir / "outside")  # what the agent left outside its working folder (carry)
        code, killed, _, _ = run_contained(
            [engine.exe, "start", "-a", name],
            spec=None,
            cwd=ep_dir,
            env=_host_env(),
            etc_dir=ep_dir / "runner" / "etc",
            max_seconds=timeout,
            max_bytes=1 << 20,
            stdout_file=ep_dir / "checker.txt",
            stderr_file=ep_dir / "checker.stderr.txt",
        )
    finally:
        _engine(engine, "rm", "-f", name)
    carried = (facts.sandbox_policy or {}).get("agent", {}).get("to the verifier", {}).get("carried", [])
    facts.sandbox_policy = {
        **(facts.sandbox_policy or {}),
        "checker": {
            "backend": engine.name,
            "image": prepared.image,
            "network": "none",
            "fresh container": True,
            "caps": engine.enforced_caps(caps.memory_bytes, caps.processes),
            "carried in": carried,
            **plan.describe(),
        },
    }
    record_verifier(facts, ep_dir, logs, code, killed, timeout)
