"""Run one eval episode: the harness's CLI (Pi by default) in a fresh workspace and HOME, under caps and a sandbox.

Per episode: the task's fixture files are copied into a new workspace; the harness (``harness.base.Harness.launch``,
reached through ``get_harness``) writes its config into the HOME seed (pointing at the endpoint) and anything it
needs into the runner folder, and says how to start the agent: the command, its environment, the folders it needs
read-only. Its output is read by threads that count bytes: past the capture cap the agent is killed (``runaway``);
past the wall-clock cap too (``timeout``). Lines the harness names (events that repeat a whole partial message) are
counted but not stored. The harness stops the agent at the turn cap and says so on stderr (``TURN_CAP_MARKER``).

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

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessfit.eval.backends.host import StageEnv
from harnessfit.eval.caps import Caps, CapWatch, check_seed_fits, collect, prune_large_files
from harnessfit.eval.episode import EpisodeFacts
from harnessfit.eval.safefs import copy_into
from harnessfit.eval.sandbox import (
    RUNNER_DIR,
    SANDBOX_HOME,
    EndpointForwarder,
    SandboxSpec,
    sandbox_path,
    sandbox_status,
    supervised,
    write_launcher,
)
from harnessfit.eval.task import Task
from harnessfit.harness.base import TURN_CAP_MARKER, EpisodeSetup, get_harness
from harnessfit.harness.versions import parse_harness

__all__ = ["Endpoint", "run_episode", "run_contained", "checker_env", "TURN_CAP_MARKER", "episode_dirname",
           "NO_SANDBOX"]

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


class _Capture:
    """Reads one pipe to EOF, stores selected lines, and shares a byte budget with its sibling."""

    def __init__(self, budget: _Budget, sink: Path, skip: tuple[bytes, ...] = ()) -> None:
        self.budget, self.sink, self.skip = budget, sink, skip

    def pump(self, pipe) -> None:
        with self.sink.open("wb") as out:
            for line in iter(pipe.readline, b""):
                self.budget.spend(len(line))
                if self.budget.exceeded:
                    continue  # keep draining so the child never blocks; the runner is killing it
                if self.skip and line.startswith(self.skip):
                    continue
                out.write(line)


class _Budget:
    def __init__(self, limit: int) -> None:
        self.limit, self.used, self.exceeded = limit, 0, False
        self._lock = threading.Lock()
        self.hit = threading.Event()

    def spend(self, n: int) -> None:
        with self._lock:
            self.used += n
            if self.used > self.limit and not self.exceeded:
                self.exceeded = True
                self.hit.set()


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(proc: subprocess.Popen, *, block: bool = False) -> float | None:
    """Wait for ``proc`` (``wait4``: its rusage counts every descendant it or they reaped, i.e. the whole sandbox);
    returns the CPU seconds once it ended, None while it runs."""
    if proc.returncode is not None:
        return 0.0
    pid, status, usage = os.wait4(proc.pid, 0 if block else os.WNOHANG)
    if pid == 0:
        return None
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def _stop(proc: subprocess.Popen) -> float | None:
    """SIGTERM first (the supervisor then kills the whole tree; bwrap dies and its namespace with it), SIGKILL to
    the process group after a grace period; returns the CPU seconds of ``_reap``."""
    if proc.returncode is None:
        os.kill(proc.pid, signal.SIGTERM)  # not proc.terminate(): its poll() would reap without the rusage
    deadline = time.monotonic() + 10
    while (cpu := _reap(proc)) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    _kill_group(proc)
    return cpu if cpu is not None else _reap(proc, block=True)


def _run_capped(cmd: list[str], *, cwd: Path, env: dict[str, str], max_seconds: float, max_bytes: int,
                stdout_file: Path, stderr_file: Path, watch: CapWatch | None = None,
                skip_lines: tuple[bytes, ...] = ()) -> tuple[int | None, str | None, int, float]:
    """Run ``cmd`` in its own session; returns (exit code, kill reason, output bytes, wall seconds). With
    ``watch`` its resource caps are watched too (kill reason ``"cap"``, the hit in ``watch.hit``); stdout lines that
    start with one of ``skip_lines`` are counted but not stored.

    Its stdout and stderr are unix sockets (socketpairs), not pipes: a pipe can be reopened for writing through
    ``/proc/<pid>/fd/1`` by any process of the same user (the agent's bash, or the harness's own ``write`` tool as
    ``/proc/self/fd/1``), which would let the agent add events to the stream it is scored from; a socket cannot be
    opened that way (ENXIO)."""
    budget = _Budget(max_bytes)
    start = time.monotonic()
    gated = watch is not None and watch.gated
    (out_r, out_w), (err_r, err_w) = socket.socketpair(), socket.socketpair()
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE if gated else subprocess.DEVNULL,
                                stdout=out_w.fileno(), stderr=err_w.fileno(), start_new_session=True)
    finally:
        out_w.close()
        err_w.close()
    readers = [out_r.makefile("rb"), err_r.makefile("rb")]
    threads = [
        threading.Thread(target=_Capture(budget, stdout_file, skip_lines).pump, args=(readers[0],), daemon=True),
        threading.Thread(target=_Capture(budget, stderr_file).pump, args=(readers[1],), daemon=True),
    ]
    for t in threads:
        t.start()
    killed: str | None = None
    deadline = start + max_seconds
    try:
        if watch is not None:
            watch.attach(proc)
        while (cpu := _reap(proc)) is None:
            if budget.hit.wait(timeout=0.05):
                killed = "output_cap"
            elif time.monotonic() > deadline:
                killed = "wall_clock"
            elif watch is not None and watch.check(proc.pid):
                killed = "cap"
            if killed:
                cpu = _stop(proc)
                break
    except BaseException:
        _stop(proc)
        raise
    code = None if killed else proc.returncode  # the exit code only of a command that ended on its own
    _kill_group(proc)  # anything left in the group
    if watch is not None and watch.finish(cpu) is not None:
        killed = "cap"  # seen after the end too: the CPU time of the whole tree, a full mount, a file at the cap
    for t in threads:
        t.join(timeout=10)
    for stream in (*readers, out_r, err_r):
        stream.close()
    return code, killed, budget.used, time.monotonic() - start


def checker_env(home: str, path: str) -> dict[str, str]:
    """The environment a checker runs in: a fresh (empty) HOME, so no ``usercustomize.py`` or ``.pth`` the agent
    planted in its HOME is there; a PATH of system folders only; no PYTHON* variable of the host. The checker's
    own interpreter is isolated by its command (``python3 -I``, which the task loader requires), and every other
    Python the checker starts (from a shell script, through a wrapper) by ``PYTHONSAFEPATH``: no script folder or
    working folder goes first on ``sys.path`` (Python >= 3.11), so a planted ``subprocess.py`` or ``json.py``
    cannot stand in for the standard library; a checker that needs the code under test appends the workspace to
    ``sys.path`` itself, after the standard library."""
    env = {"HOME": home, "PATH": path, "PYTHONNOUSERSITE": "1", "PYTHONSAFEPATH": "1", "PYTHONDONTWRITEBYTECODE": "1",
           "NO_COLOR": "1", "TMPDIR": "/tmp"}
    for key in ("LANG", "LC_ALL", "TZ"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def _host_path_without(*folders: Path) -> str:
    keep = []
    for entry in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        if any(Path(entry).resolve().is_relative_to(f.resolve()) for f in folders):
            continue
        keep.append(entry)
    return os.pathsep.join(keep)


def run_contained(
    cmd: Sequence[str],
    *,
    spec: SandboxSpec | None,
    cwd: Path,
    cwd_inside: str | None = None,
    env: dict[str, str],
    etc_dir: Path,
    max_seconds: float,
    max_bytes: int,
    stdout_file: Path,
    stderr_file: Path,
    watch: CapWatch | None = None,
    skip_lines: tuple[bytes, ...] = (),
) -> tuple[int | None, str | None, int, float]:
    """Run ``cmd`` in the sandbox ``spec`` (working folder ``cwd_inside``, default ``cwd``'s own path) or, with
    ``spec=None``, unsandboxed under the subreaper supervisor; caps as ``_run_capped``."""
    if spec is not None:
        full = spec.command(cmd, cwd=cwd_inside or str(cwd.resolve()), etc_dir=etc_dir)
    else:
        full = supervised(cmd)
    return _run_capped(full, cwd=cwd, env=env, max_seconds=max_seconds, max_bytes=max_bytes,
                       stdout_file=stdout_file, stderr_file=stderr_file, watch=watch, skip_lines=skip_lines)


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
    from harnessfit.eval.harbor import HarborTask

    rel = episode_dirname(task.id, seed)
    ep_dir = (run_dir / rel).resolve()
    turns = max_turns or task.limits.max_turns
    status = sandbox_status() if sandbox else NO_SANDBOX
    facts = EpisodeFacts(task_id=task.id, seed=seed, sandbox=status, max_turns=turns,
                         events_file=f"{rel}/events.jsonl", stderr_file=f"{rel}/stderr.txt")
    harbor = isinstance(task, HarborTask)
    facts.image = task.image if harbor else None
    if harbor and task.environment_issue is not None:
        facts.status, facts.error = "needs_container", task.environment_issue
        return facts
    if sandbox and status != "bwrap":
        facts.status, facts.error = "error", f"sandbox requested but unavailable ({status}); not run unsandboxed"
        return facts
    if harbor and not sandbox:
        facts.status, facts.error = "error", "a Harbor task needs the sandbox (it names /app, /tests, /logs)"
        return facts
    facts.backend = "host" if harbor else None  # bubblewrap on this machine stands in for the task's image
    forwarder: EndpointForwarder | None = None
    try:
        if ep_dir.exists():
            shutil.rmtree(ep_dir)
        workspace, sessions, runner = ep_dir / "workspace", ep_dir / "sessions", ep_dir / "runner"
        seed_ws = runner / "workspace" if sandbox else workspace  # sandboxed: seeds the workspace tmpfs
        for d in (workspace, sessions, seed_ws, runner / "etc", runner / "endpoint"):
            d.mkdir(parents=True, exist_ok=True)
        if harbor:
            task.seed_workspace(seed_ws)
        else:
            copy_into(task.workspace_dir, seed_ws)
        caps = Caps.from_limits(task.limits)
        check_seed_fits(seed_ws, caps)
        mount = task.mount if harbor else str(workspace)  # where the workspace is inside the sandbox
        inside_ws = task.workdir if harbor else str(workspace)  # the agent's working folder there
        home = SANDBOX_HOME if sandbox else str(ep_dir / "home")
        seed_dir = runner / "home" if sandbox else ep_dir / "home"
        seed_dir.mkdir(parents=True, exist_ok=True)  # the harness writes its config into it (Pi: .pi/agent)
        agent = get_harness(harness)
        launch = agent.launch(parse_harness(harness)[1], EpisodeSetup(
            endpoint.base_url, endpoint.model_id, task.prompt, home=seed_dir, home_inside=home, runner=runner,
            runner_inside=RUNNER_DIR if sandbox else str(runner), session_dir=sessions, tools=tools, max_turns=turns,
            context_window=endpoint.context_window, api_key=endpoint.api_key))
        cmd, env = list(launch.cmd), dict(launch.env)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        spec: SandboxSpec | None = None
        if sandbox:
            forwarder = EndpointForwarder(endpoint.base_url)
            stage = task.agent_stage(ep_dir) if harbor else StageEnv()  # the Dockerfile's RUN steps, on the host
            env.update(stage.env)
            env["PATH"], env["TMPDIR"] = stage.path(sandbox_path()), "/tmp"
            env.pop("NODE_OPTIONS", None)  # may name host files the sandbox does not have
            read_only: list[Any] = [*launch.read_only, (forwarder.folder, f"{RUNNER_DIR}/endpoint"), *stage.read_only]
            if expose_solution and harbor:
                read_only.append((task.solution_dir, "/solution"))
            out_bytes = max_output_bytes or task.limits.max_output_bytes
            spec = SandboxSpec(read_only=read_only, read_write=list(stage.read_write), runner_dir=runner, hosts=[h for h in [forwarder.hostname] if h],
                               forward=(forwarder.listen_host, forwarder.port, forwarder.socket_path,
                                        f"{forwarder.host}:{forwarder.port}"), caps=caps,
                               captured=[(mount, caps.workspace_bytes), (str(sessions), max(2 * out_bytes, 16 << 20))])
            watch = CapWatch(caps, {"workspace": mount, "sessions": str(sessions), "/tmp": "/tmp",
                                    "HOME": SANDBOX_HOME, "/dev/shm": "/dev/shm"},
                             probe=(write_launcher(runner), f"{RUNNER_DIR}/launch.mjs"))
            node = str(Path(shutil.which("node") or "node").resolve())
            cmd = [node, f"{RUNNER_DIR}/launch.mjs", f"{RUNNER_DIR}/endpoint/model.sock", forwarder.listen_host,
                   str(forwarder.port), f"{RUNNER_DIR}/home", SANDBOX_HOME, f"{RUNNER_DIR}/workspace", mount,
                   inside_ws, *cmd]
            inside_ws = mount  # bwrap starts in the (still empty) workspace tmpfs; the launcher seeds it
        else:
            (ep_dir / "home" / "tmp").mkdir(parents=True)
            env["TMPDIR"] = str(ep_dir / "home" / "tmp")
            watch = CapWatch(caps)  # unsandboxed: the runner-side caps only (processes, CPU seconds)
        try:
            code, killed, used, wall = run_contained(
                cmd, spec=spec, cwd=workspace, cwd_inside=inside_ws, env=env, etc_dir=runner / "etc",
                max_seconds=max_seconds or task.limits.max_seconds,
                max_bytes=max_output_bytes or task.limits.max_output_bytes,
                stdout_file=ep_dir / "events.jsonl", stderr_file=ep_dir / "stderr.txt", watch=watch,
                skip_lines=launch.skip_lines,
            )
            collect(watch, workspace, sessions, facts)
        finally:
            watch.close()
        if forwarder is not None:
            forwarder.close()
            forwarder = None
        stderr = (ep_dir / "stderr.txt").read_text(encoding="utf-8", errors="replace")
        facts.pi_exit_code, facts.killed, facts.output_bytes = code, (None if killed == "cap" else killed), used
        facts.wall_seconds = round(wall, 3)
        facts.turn_cap_hit = TURN_CAP_MARKER in stderr
        found = agent.session_file(sessions)
        facts.session_file = found.relative_to(run_dir.resolve()).as_posix() if found is not None else None
        facts.sandbox_policy = {"agent": spec.describe()} if spec is not None else None
        if killed is None and code != 0:
            tail = " | ".join(stderr.strip().splitlines()[-3:]) or "no stderr"
            facts.status, facts.error = "error", f"{agent.name} exited with code {code}: {tail}"[:2000]
            return facts
        if killed is None and (why := agent.started(ep_dir / "events.jsonl")) is not None:
            facts.status, facts.error = "error", why
            return facts
        if harbor:
            task.verify(workspace, ep_dir, facts, sandboxed=sandbox)
        else:
            _check(task, workspace, ep_dir, facts, sandboxed=sandbox)
        facts.pruned += prune_large_files(workspace)  # the run folder keeps what a report needs
    except Exception as exc:  # noqa: BLE001 - any runner failure is recorded as an unscored episode
        facts.status, facts.error = "error", f"{type(exc).__name__}: {exc}"[:2000]
    finally:
        if forwarder is not None:
            forwarder.close()
    return facts


def _check(task: Task, workspace: Path, ep_dir: Path, facts: EpisodeFacts, *, sandboxed: bool) -> None:
    """Expected change, then the checker's files copied in (no link followed) and the checker run, isolated."""
    facts.expected_change = all(change.holds(workspace) for change in task.expected_change)
    copy_into(task.checker_dir, workspace)
    check = ["bash", "-c", task.checker.command]
    scratch = None
    try:
        if sandboxed:
            spec = SandboxSpec(read_write=[workspace], caps=Caps.from_limits(task.limits))  # no network at all
            env = checker_env(SANDBOX_HOME, sandbox_path())
            facts.sandbox_policy = {**(facts.sandbox_policy or {}), "checker": spec.describe()}
        else:
            spec = None
            scratch = Path(tempfile.mkdtemp(prefix="hf-checker-home-"))
            env = checker_env(str(scratch), _host_path_without(ep_dir))
            env["TMPDIR"] = str(scratch)
        ccode, ckilled, _, _ = run_contained(
            check, spec=spec, cwd=workspace, env=env, etc_dir=ep_dir / "runner" / "etc",
            max_seconds=task.checker.timeout_s, max_bytes=1 << 20,
            stdout_file=ep_dir / "checker.txt", stderr_file=ep_dir / "checker.stderr.txt",
        )
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    facts.checker_exit_code = ccode if ckilled is None else -1
    out = (ep_dir / "checker.txt").read_text(errors="replace") + (ep_dir / "checker.stderr.txt").read_text(
        errors="replace")
    facts.checker_output = out[-2000:]
