"""Serve an ASGI app on 127.0.0.1 from a background thread of this process (port 0 → a free port), for as long as a
``with`` block lasts: how the scripted model is served to the real harness, to tests and to eval smoke runs."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from harnessfit.errors import UserError

__all__ = ["HOST", "BackgroundServer", "bind"]

HOST = "127.0.0.1"
_START_TIMEOUT_S = 30.0


def bind(port: int, host: str = HOST) -> socket.socket:
    """A listening socket on ``host`` (127.0.0.1 unless a caller names another)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


class BackgroundServer:
    """uvicorn serving ``app`` in a daemon thread; ``start`` returns once it accepts requests, ``stop`` ends it."""

    def __init__(self, app: Any, host: str = HOST, port: int = 0, name: str = "endpoint") -> None:
        self.app = app
        self.host = host
        self.port = port
        self.name = name
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        """Serve; the bound port."""
        sock = bind(self.port, self.host)
        port = sock.getsockname()[1]
        # log_config=None: starting a server inside a program (a test, an eval) leaves that program's logging alone
        config = uvicorn.Config(
            self.app, log_config=None, log_level="warning", access_log=False, timeout_graceful_shutdown=2
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=self.name, daemon=True)
        thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                sock.close()
                raise RuntimeError(f"the {self.name} server on {self.host}:{port} did not start")
            time.sleep(0.005)
        self._server, self._thread = server, thread
        return port

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = self._thread = None
