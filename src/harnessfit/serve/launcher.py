"""Start a server as a subprocess and hand back a handle (what eval and the demo use), and point a harness at it.

Why a subprocess: the model, its threads and its memory live and die with the server, a crash cannot take the
caller down, and ``.stop()`` returns every byte. ``start_server`` returns only once the endpoint answers
``/v1/models``; when it does not come up, the error carries the tail of the server's log.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from harnessfit.errors import UserError
from harnessfit.harness.base import get_harness
from harnessfit.serve.vllm import prepare_vllm, vllm_available

__all__ = ["BACKENDS", "ServerHandle", "choose_backend", "start_server", "write_harness_config"]

BACKENDS = ("auto", "builtin", "vllm")
_LIVE: set[ServerHandle] = set()


def choose_backend(backend: str) -> str:
    """``auto`` → ``vllm`` only when a vLLM program is found (``vllm_executable``) and CUDA is available, else
    ``builtin``."""
    if backend not in BACKENDS:
        raise UserError(f"unknown backend {backend!r}: use one of {', '.join(BACKENDS)}")
    if backend == "auto":
        return "vllm" if vllm_available() else "builtin"
    if backend == "vllm" and not vllm_available():
        raise UserError(
            "backend vllm needs the vllm package (make setup GPU=1, or HARNESSFIT_VLLM=/path/to/vllm) and a "
            "CUDA GPU; use --backend builtin on this machine"
        )
    return backend


@dataclass(eq=False)
class ServerHandle:
    """A running server: where to reach it (``base_url`` ends in ``/v1``), which model id to ask for, its process.

    Use as a context manager or call ``stop()``; servers still running when Python exits are stopped too.
    """

    base_url: str
    model_id: str
    process: subprocess.Popen
    backend: str
    log_path: Path
    max_tokens: int
    context_window: int | None = None
    _tmpdir: Path | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1].split("/", 1)[0])

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the server's process group, SIGKILL after ``timeout`` seconds; idempotent."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.process.wait(timeout=timeout)
        _LIVE.discard(self)
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@atexit.register
def _stop_all() -> None:
    for handle in list(_LIVE):
        handle.stop(timeout=5.0)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_models(base_url: str, proc: subprocess.Popen, deadline: float) -> bool:
    import httpx

    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    return False


def _fail(handle: ServerHandle, why: str) -> UserError:
    tail = handle.log_tail()
    handle.stop(timeout=3.0)
    return UserError(f"{handle.backend} server for {handle.model_id} {why}" + (f"; log tail:\n{tail}" if tail else ""))


def _builtin_command(
    model: str,
    ready: Path,
    *,
    adapter: Path | None,
    tokenizer: Path | None,
    port: int,
    max_tokens: int,
    model_id: str | None,
    threads: int,
    best_of: int,
    best_of_log: Path | None,
    max_queue: int | None,
    temperature: float | None = None,
) -> list[str]:
    """The ``harnessfit serve`` command line of the built-in backend, writing ``ready`` once it serves."""
    cmd = [
        sys.executable,
        "-m",
        "harnessfit.cli",
        "serve",
        str(model),
        "--backend",
        "builtin",
        "--port",
        str(port),
        "--max-tokens",
        str(max_tokens),
        "--threads",
        str(threads),
        "--ready-file",
        str(ready),
    ]
    if adapter is not None:
        cmd += ["--adapter", str(adapter)]
    if tokenizer is not None:
        cmd += ["--tokenizer", str(tokenizer)]
    if model_id is not None:
        cmd += ["--model-id", model_id]
    if best_of > 1:
        cmd += ["--best-of", str(best_of), "--verifier", "card"]
        if best_of_log is not None:
            cmd += ["--best-of-log", str(best_of_log)]
    if max_queue is not None:
        cmd += ["--max-queue", str(max_queue)]
    if temperature is not None:
        cmd += ["--temperature", str(temperature)]
    return cmd


def _await_ready_file(handle: ServerHandle, ready: Path, deadline: float) -> None:
    """Wait for the built-in server's ready file; take its address, model id and context window into ``handle``."""
    proc = handle.process
    while not ready.exists():
        if proc.poll() is not None:
            raise _fail(handle, f"exited with code {proc.returncode} before becoming ready")
        if time.monotonic() > deadline:
            raise _fail(handle, "did not become ready in time")
        time.sleep(0.2)
    info = orjson.loads(ready.read_bytes())
    handle.base_url, handle.model_id = info["base_url"], info["model_id"]
    handle.context_window = info.get("context_window")


def start_server(
    model: str,
    *,
    adapter: Path | None = None,
    tokenizer: Path | None = None,
    port: int = 0,
    max_tokens: int = 512,
    backend: str = "auto",
    model_id: str | None = None,
    timeout: float | None = None,
    log_path: Path | None = None,
    threads: int = 1,
    env: dict[str, str] | None = None,
    best_of: int = 1,
    best_of_log: Path | None = None,
    max_queue: int | None = None,
    temperature: float | None = None,
) -> ServerHandle:
    """Launch ``harnessfit serve`` (built-in) or ``vllm serve`` as a subprocess; return once it answers.

    ``port=0`` picks a free port. ``timeout`` defaults to 300 s (built-in) / 900 s (vLLM). The log goes to
    ``log_path`` (default: a temporary folder removed by ``stop()``). ``best_of`` > 1 serves the best of that many
    candidates verified by the harness card (``serve.bestof``; built-in backend), logging each request to
    ``best_of_log``. ``max_queue`` bounds the requests admitted at once (``serve --max-queue``). ``temperature``:
    the server's sampling temperature for requests that name none, as Pi's (``serve --temperature``; default greedy).
    """
    kind = choose_backend(backend)
    if best_of > 1 and kind != "builtin":
        raise UserError("best-of-n needs the built-in backend (backend builtin)")
    tmpdir = Path(tempfile.mkdtemp(prefix="harnessfit-serve-"))
    log = Path(log_path) if log_path is not None else tmpdir / "server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    run_env = {**os.environ, **(env or {})}
    if kind == "builtin":
        ready = tmpdir / "ready.json"
        cmd = _builtin_command(
            model,
            ready,
            adapter=adapter,
            tokenizer=tokenizer,
            port=port,
            max_tokens=max_tokens,
            model_id=model_id,
            threads=threads,
            best_of=best_of,
            best_of_log=best_of_log,
            max_queue=max_queue,
            temperature=temperature,
        )
        run_env.setdefault("OMP_NUM_THREADS", str(threads))
    else:
        real_port = port or _free_port()
        launch = prepare_vllm(
            model,
            workdir=tmpdir,
            port=real_port,
            adapter=adapter,
            tokenizer=tokenizer,
            max_tokens=max_tokens,
            model_id=model_id,
            temperature=temperature,
        )
        cmd = launch.command
    with log.open("ab") as fh:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, env=run_env, start_new_session=True
        )
    deadline = time.monotonic() + (timeout if timeout is not None else (300.0 if kind == "builtin" else 900.0))
    if kind == "builtin":
        handle = ServerHandle("", model_id or str(model), proc, kind, log, max_tokens, None, tmpdir)
        _LIVE.add(handle)
        _await_ready_file(handle, ready, deadline)
    else:
        handle = ServerHandle(
            f"http://127.0.0.1:{real_port}/v1",
            launch.model_id,
            proc,
            kind,
            log,
            max_tokens,
            launch.context_window,
            tmpdir,
        )
        _LIVE.add(handle)
    if not _wait_models(handle.base_url, proc, deadline):
        raise _fail(handle, "did not answer /v1/models" if proc.poll() is None else f"exited ({proc.returncode})")
    return handle


def write_harness_config(
    agent_dir: Path,
    handle: ServerHandle,
    *,
    context_window: int | None = None,
    max_tokens: int | None = None,
    eval_settings: bool = True,
    harness: str | None = None,
) -> Path:
    """Write the client config of ``harness`` (a spec; default: Pi, whose ``models.json`` + ``settings.json`` make it
    talk to the server as ``--model local/<handle.model_id>``) into ``agent_dir`` for a running server; returns
    ``agent_dir``. The context window is ``context_window`` if given, else the server's own (``handle.context_window``:
    the built-in backend's model context, vLLM's max model length), and 32768 only when neither is known."""
    get_harness(harness).write_client_config(
        Path(agent_dir),
        handle.base_url,
        handle.model_id,
        context_window=context_window or handle.context_window or 32768,
        max_tokens=max_tokens or handle.max_tokens,
        eval_settings=eval_settings,
    )
    return Path(agent_dir)
