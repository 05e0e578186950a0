"""``harnessfit view``: serve a report folder over HTTP on 127.0.0.1 only (the report also opens from disk; serving
helps where a browser restricts ``file://`` pages)."""

from __future__ import annotations

import functools
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from harnessfit.errors import UserError

__all__ = ["HOST", "serve_folder"]

HOST = "127.0.0.1"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass


def serve_folder(folder: Path, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server for ``folder`` bound to 127.0.0.1 (``port`` 0 picks a free one); call ``serve_forever``."""
    folder = Path(folder).resolve()
    if not (folder / "index.html").is_file():
        raise UserError(f"no index.html in {folder}: build the report first with `harnessfit report`")
    handler = functools.partial(_QuietHandler, directory=str(folder))
    try:
        return ThreadingHTTPServer((HOST, port), handler)
    except OSError as exc:
        raise UserError(f"cannot listen on {HOST}:{port} ({exc.strerror or exc}); pass another --port, "
                        "or --port 0 for a free one") from exc
