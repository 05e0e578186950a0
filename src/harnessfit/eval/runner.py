"""Run one eval episode: the real Pi CLI in json mode, in a fresh workspace and HOME, under caps and a sandbox.

Per episode: the task's fixture files are copied into a new workspace; HOME gets a Pi config pointing at the
endpoint (retries and compaction off); Pi runs with ``PI_OFFLINE=1``, stdin from /dev/null, ``--session-dir``,
and a tiny extension (``-e``) that aborts the agent after N model turns (Pi has no max-turns flag). Its output
is read by threads that count bytes: past the capture cap the agent is killed (``runaway``); past the wall-clock
cap too (``timeout``). ``message_update``/``tool_execution_update`` events (each repeats the whole partial
message) are counted but not stored.

Containment (``eval/sandbox.py``): under bubblewrap the agent sees only the system folders, Pi's install, its
workspace and session folder, a tmpfs HOME and /tmp, and reaches nothing on the network but the model endpoint,
through a forwarder; the PID namespace ends every process it started with it. Resource caps (``eval/caps.py``):
every tmpfs is sized, the workspace and session folder are sized tmpfs copied out after the sandbox ended, files,
processes, CPU time and memory are capped; the first cap reached stops the episode (``facts.cap_hit``). Without the sandbox (only on an
explicit ``--no-sandbox``) a subreaper supervisor kills the agent's whole process tree, ``setsid`` children
included.

After Pi stopped, the expected-change predicates are evaluated and the checker's files copied in without
following any link the agent left (``eval/safefs.py``); the checker then runs in a sandbox of its own with a
fresh HOME, no network and an isolated Python environment (``checker_env``), so nothing the agent wrote into
HOME, PATH or the Python search path can make it pass.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

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
from harnessfit.harness.pi import DEFAULT_PI_VERSION, pi_command, pi_env, write_pi_agent_config
from harnessfit.paths import harness_dir

__all__ = ["Endpoint", "run_episode", "run_contained", "checker_env", "TURN_CAP_MARKER", "episode_dirname",
           "NO_SANDBOX"]

NO_SANDBOX = "none: disabled by --no-sandbox"

TURN_CAP_MARKER = "harnessfit: turn cap reached"
_SKIP_EVENTS = (b'{"type":"message_update"', b'{"type":"tool_execution_update"')
_TOOLS = ("read", "bash", "edit", "write")


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible endpoint Pi talks to: a scripted one, ``harnessfit serve``, or anything else."""

    base_url: str
    model_id: str
    name: str = ""
    context_window: int | None = None  # the served model's window, written into Pi's models.json when known

    @property
    def label(self) -> str:
        return self.name or self.model_id


def episode_dirname(task_id: str, seed: int) -> str:
    return f"episodes/{task_id}/seed-{seed}"


def _turn_cap_extension(max_turns: int) -> str:
    return (
        "// written by harnessfit eval: abort the agent once it has used its model turns\n"
        "export default function (pi) {\n"
        '  pi.on("turn_end", (event, ctx) => {\n'
        f"    if (event.turnIndex + 1 >= {max_turns}) {{\n"
        f'      console.error("{TURN_CAP_MARKER}");\n'
        "      ctx.abort();\n"
        "    }\n"
        "  });\n"
        "}\n"
    )


class _Capture:
    """Reads one pipe to EOF, stores selected lines, and shares a byte budget with its sibling."""

    def __init__(self, budget: _Budget, sink: Path, filter_events: bool) -> None:
        self.budget, self.sink, self.filter_events = budget, sink, filter_events

    def pump(self, pipe) -> None:
        with self.sink.open("wb") as out:
            for line in iter(pipe.readline, b""):
                self.budget.spend(len(line))
                if self.budget.exceeded:
                    continue  # keep draining so the child never blocks; the runner is killing it
                if self.filter_events and line.startswith(_SKIP_EVENTS):
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
                stdout_file: Path, stderr_file: Path,
                watch: CapWatch | None = None) -> tuple[int | None, str | None, int, float]:
    """Run ``cmd`` in its own session; returns (exit code, kill reason, output bytes, wall seconds). With
    ``watch`` its resource caps are watched too (kill reason ``"cap"``, the hit in ``watch.hit``).

    Its stdout and stderr are unix sockets (socketpairs), not pipes: a pipe can be reopened for writing through
    ``/proc/<pid>/fd/1`` by any process of the same user (the agent's bash, or Pi's own ``write`` tool as
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
        threading.Thread(target=_Capture(budget, stdout_file, True).pump, args=(readers[0],), daemon=True),
        threading.Thread(target=_Capture(budget, stderr_file, False).pump, args=(readers[1],), daemon=True),
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
) -> tuple[int | None, str | None, int, float]:
    """Run ``cmd`` in the sandbox ``spec`` (working folder ``cwd_inside``, default ``cwd``'s own path) or, with
    ``spec=None``, unsandboxed under the subreaper supervisor; caps as ``_run_capped``."""
    if spec is not None:
        full = spec.command(cmd, cwd=cwd_inside or str(cwd.resolve()), etc_dir=etc_dir)
    else:
        full = supervised(cmd)
    return _run_capped(full, cwd=cwd, env=env, max_seconds=max_seconds, max_bytes=max_bytes,
                       stdout_file=stdout_file, stderr_file=stderr_file, watch=watch)


def _install_root(binary: Path, version: str) -> Path:
    """The folder holding the ``node_modules`` of the Pi binary that runs (bound read-only: whichever version)."""
    return next((p.parent for p in binary.parents if p.name == "node_modules"), harness_dir("pi", version))


def _session_file(sessions: Path, run_dir: Path) -> str | None:
    """The newest regular ``*.jsonl`` in the session folder (a link the agent planted there is not Pi's file)."""
    found = []
    for path in sessions.iterdir():
        try:
            st = path.lstat()
        except OSError:
            continue
        if path.suffix == ".jsonl" and stat.S_ISREG(st.st_mode):
            found.append(path)
    return max(found).relative_to(run_dir.resolve()).as_posix() if found else None


def run_episode(
    task: Task,
    seed: int,
    endpoint: Endpoint,
    run_dir: Path,
    *,
    pi_version: str = DEFAULT_PI_VERSION,
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
        agent_dir = seed_dir / ".pi" / "agent"
        write_pi_agent_config(agent_dir, endpoint.base_url, endpoint.model_id, eval_settings=True,
                              **({"context_window": endpoint.context_window} if endpoint.context_window else {}))
        ext = runner / "turn_cap.js"
        ext.write_text(_turn_cap_extension(turns), encoding="utf-8")
        ext_arg = f"{RUNNER_DIR}/turn_cap.js" if sandbox else str(ext)
        cmd = pi_command(pi_version, endpoint.model_id, task.prompt, session_dir=sessions, tools=tools or _TOOLS,
                         extra_args=["-e", ext_arg])
        env = pi_env(Path(home), Path(home) / ".pi" / "agent")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        spec: SandboxSpec | None = None
        if sandbox:
            forwarder = EndpointForwarder(endpoint.base_url)
            env["PATH"], env["TMPDIR"] = sandbox_path(), "/tmp"
            env.pop("NODE_OPTIONS", None)  # may name host files the sandbox does not have
            read_only: list[Any] = [_install_root(Path(cmd[0]), pi_version),
                                    (forwarder.folder, f"{RUNNER_DIR}/endpoint")]
            if expose_solution and harbor:
                read_only.append((task.solution_dir, "/solution"))
            out_bytes = max_output_bytes or task.limits.max_output_bytes
            spec = SandboxSpec(read_only=read_only, runner_dir=runner, hosts=[h for h in [forwarder.hostname] if h],
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
        facts.session_file = _session_file(sessions, run_dir)
        facts.sandbox_policy = {"agent": spec.describe()} if spec is not None else None
        if killed is None and code != 0:
            tail = " | ".join(stderr.strip().splitlines()[-3:]) or "no stderr"
            facts.status, facts.error = "error", f"pi exited with code {code}: {tail}"[:2000]
            return facts
        if killed is None and _first_event_type(ep_dir / "events.jsonl") != "session":
            facts.status, facts.error = "error", "pi printed no json event stream (harness did not start)"
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


def _first_event_type(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            first = fh.readline()
        return orjson.loads(first).get("type") if first.strip() else None
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return None
