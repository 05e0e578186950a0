"""Run one eval episode: the real Pi CLI in json mode, in a fresh workspace and HOME, under caps and a sandbox.

Per episode: the task's fixture files are copied into a new workspace; HOME gets a Pi config pointing at the
endpoint (retries and compaction off); Pi runs with ``PI_OFFLINE=1``, stdin from /dev/null, ``--session-dir``,
and a tiny extension (``-e``) that aborts the agent after N model turns (Pi has no max-turns flag). Its output
is read by threads that count bytes: past the capture cap the process group is killed (``runaway``); past the
wall-clock cap too (``timeout``). After Pi stopped, the expected-change predicates are evaluated, then the
checker's files are copied in and the checker runs. ``message_update``/``tool_execution_update`` events (each
repeats the whole partial message) are counted but not stored.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from harnessfit.eval.episode import EpisodeFacts
from harnessfit.eval.sandbox import sandbox_status, wrap_command
from harnessfit.eval.task import Task
from harnessfit.harness.pi import DEFAULT_PI_VERSION, pi_command, pi_env, write_pi_agent_config
from harnessfit.paths import harness_dir

__all__ = ["Endpoint", "run_episode", "TURN_CAP_MARKER", "episode_dirname"]

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


def _run_capped(cmd: list[str], *, cwd: Path, env: dict[str, str], max_seconds: float, max_bytes: int,
                stdout_file: Path, stderr_file: Path) -> tuple[int | None, str | None, int, float]:
    """Run ``cmd`` in its own process group; returns (exit code, kill reason, output bytes, wall seconds)."""
    budget = _Budget(max_bytes)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    threads = [
        threading.Thread(target=_Capture(budget, stdout_file, True).pump, args=(proc.stdout,), daemon=True),
        threading.Thread(target=_Capture(budget, stderr_file, False).pump, args=(proc.stderr,), daemon=True),
    ]
    for t in threads:
        t.start()
    killed: str | None = None
    deadline = start + max_seconds
    while proc.poll() is None:
        if budget.hit.wait(timeout=0.05):
            killed = "output_cap"
        elif time.monotonic() > deadline:
            killed = "wall_clock"
        if killed:
            _kill_group(proc)
            break
    code = proc.wait()
    _kill_group(proc)  # anything the agent left running in the group
    for t in threads:
        t.join(timeout=10)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    return (None if killed else code), killed, budget.used, time.monotonic() - start


def _copy_tree(src: Path, dst: Path) -> None:
    if not src.is_dir():
        return
    for path in sorted(src.rglob("*")):
        if "__pycache__" in path.parts:
            continue
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def run_episode(
    task: Task,
    seed: int,
    endpoint: Endpoint,
    run_dir: Path,
    *,
    pi_version: str = DEFAULT_PI_VERSION,
    sandbox: bool = True,
    max_turns: int | None = None,
    max_seconds: float | None = None,
    max_output_bytes: int | None = None,
) -> EpisodeFacts:
    """Run ``task`` once against ``endpoint``; files go to ``run_dir/episodes/<task>/seed-<seed>/``.

    Never raises for a failing agent; a runner/harness problem becomes ``status="error"`` (unscored).
    """
    rel = episode_dirname(task.id, seed)
    ep_dir = (run_dir / rel).resolve()
    turns = max_turns or task.limits.max_turns
    status = sandbox_status() if sandbox else "none: disabled by the caller"
    facts = EpisodeFacts(task_id=task.id, seed=seed, sandbox=status, max_turns=turns,
                         events_file=f"{rel}/events.jsonl", stderr_file=f"{rel}/stderr.txt")
    try:
        if ep_dir.exists():
            shutil.rmtree(ep_dir)
        workspace, home, sessions = ep_dir / "workspace", ep_dir / "home", ep_dir / "sessions"
        for d in (workspace, home, sessions, home / "tmp"):
            d.mkdir(parents=True)
        _copy_tree(task.workspace_dir, workspace)
        agent_dir = home / ".pi" / "agent"
        write_pi_agent_config(agent_dir, endpoint.base_url, endpoint.model_id, eval_settings=True,
                              **({"context_window": endpoint.context_window} if endpoint.context_window else {}))
        ext = home / ".harnessfit" / "turn_cap.js"
        ext.parent.mkdir(parents=True)
        ext.write_text(_turn_cap_extension(turns), encoding="utf-8")
        cmd = pi_command(pi_version, endpoint.model_id, task.prompt, session_dir=sessions, tools=_TOOLS,
                         extra_args=["-e", str(ext)])
        env = pi_env(home, agent_dir)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        wrap = status == "bwrap"
        env["TMPDIR"] = "/tmp" if wrap else str(home / "tmp")
        pi_root = harness_dir("pi", pi_version)
        if wrap:
            cmd = wrap_command(cmd, cwd=workspace, writable=[workspace, home, sessions], readable=[pi_root])
        code, killed, used, wall = _run_capped(
            cmd, cwd=workspace, env=env,
            max_seconds=max_seconds or task.limits.max_seconds,
            max_bytes=max_output_bytes or task.limits.max_output_bytes,
            stdout_file=ep_dir / "events.jsonl", stderr_file=ep_dir / "stderr.txt",
        )
        stderr = (ep_dir / "stderr.txt").read_text(encoding="utf-8", errors="replace")
        session_files = sorted(sessions.glob("*.jsonl"))
        facts.pi_exit_code, facts.killed, facts.output_bytes = code, killed, used
        facts.wall_seconds = round(wall, 3)
        facts.turn_cap_hit = TURN_CAP_MARKER in stderr
        facts.session_file = session_files[-1].relative_to(run_dir.resolve()).as_posix() if session_files else None
        if killed is None and code != 0:
            tail = " | ".join(stderr.strip().splitlines()[-3:]) or "no stderr"
            facts.status, facts.error = "error", f"pi exited with code {code}: {tail}"[:2000]
            return facts
        if killed is None and _first_event_type(ep_dir / "events.jsonl") != "session":
            facts.status, facts.error = "error", "pi printed no json event stream (harness did not start)"
            return facts
        facts.expected_change = all(change.holds(workspace) for change in task.expected_change)
        _copy_tree(task.checker_dir, workspace)
        check = ["bash", "-c", task.checker.command]
        if wrap:
            check = wrap_command(check, cwd=workspace, writable=[workspace, home])
        ccode, ckilled, _, _ = _run_capped(
            check, cwd=workspace, env=env, max_seconds=task.checker.timeout_s, max_bytes=1 << 20,
            stdout_file=ep_dir / "checker.txt", stderr_file=ep_dir / "checker.stderr.txt",
        )
        facts.checker_exit_code = ccode if ckilled is None else -1
        out = (ep_dir / "checker.txt").read_text(errors="replace") + (ep_dir / "checker.stderr.txt").read_text(
            errors="replace")
        facts.checker_output = out[-2000:]
    except Exception as exc:  # noqa: BLE001 - any runner failure is recorded as an unscored episode
        facts.status, facts.error = "error", f"{type(exc).__name__}: {exc}"[:2000]
    return facts


def _first_event_type(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            first = fh.readline()
        return orjson.loads(first).get("type") if first.strip() else None
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return None
