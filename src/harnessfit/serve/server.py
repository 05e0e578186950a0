"""Run the built-in backend in this process: bind 127.0.0.1 (port 0 → a free port), announce, serve until stopped.

Why announce through a file: ``start_server`` launches this in a subprocess and must learn the port the OS chose
and when the model finished loading; the ready file (written after loading and binding, atomically) carries both.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from harnessfit.endpoint.background import HOST, bind
from harnessfit.serve.app import create_app
from harnessfit.serve.capture import CaptureStore
from harnessfit.serve.engine import Engine

__all__ = ["serve_engine"]


def _announce(ready_file: Path, info: dict) -> None:
    tmp = ready_file.with_name(ready_file.name + ".tmp")
    tmp.write_bytes(orjson.dumps(info))
    os.replace(tmp, ready_file)


def serve_engine(
    engine: Engine,
    *,
    port: int = 0,
    ready_file: Path | None = None,
    on_ready=None,
    max_queue: int | None = None,
    capture_dir: Path | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM. ``on_ready(base_url)`` is called once the socket listens; ``max_queue`` bounds
    the chat requests admitted at once (``endpoint.admission``; default ``DEFAULT_MAX_QUEUE``); ``capture_dir``
    records every answered request's sampled tokens per episode (``serve.capture``)."""
    import uvicorn

    sock = bind(port)
    real_port = sock.getsockname()[1]
    base_url = f"http://{HOST}:{real_port}/v1"
    kwargs = {} if max_queue is None else {"max_queue": max_queue}
    app = create_app(engine, capture=CaptureStore(capture_dir) if capture_dir is not None else None, **kwargs)
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    if ready_file is not None:
        _announce(
            Path(ready_file),
            {
                "port": real_port,
                "base_url": base_url,
                "model_id": engine.model_id,
                "pid": os.getpid(),
                "context_window": engine.context_window,
                "max_tokens": engine.max_tokens,
            },
        )
    if on_ready is not None:
        on_ready(base_url)
    server.run(sockets=[sock])
