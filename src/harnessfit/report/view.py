"""``harnessfit view``: serve a report folder over HTTP on 127.0.0.1 only (the report also opens from disk; serving
helps where a browser restricts ``file://`` pages)."""

from __future__ import annotations

import functools
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from harnessfit.errors import UserError

__all__ = ["HOST", "serve_folder"]

HOST = "127.0.0.1"


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})


def _loopback_host(value: str | None) -> bool:
    """A ``Host`` header naming this machine's loopback (with or without a port). A DNS-rebinding page reaches the
    server under its own name, so any other Host is refused: the report holds sessions and traces."""
    if not value:
        return False
    host = value.strip().lower()
    if host.startswith("["):
        host = host.split("]", 1)[0] + "]"
    else:
        host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return host in LOOPBACK_NAMES


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # the base class's name
        pass

    def _refused(self) -> bool:
        if _loopback_host(self.headers.get("Host")):
            return False
        self.send_error(421, "this server answers only requests for 127.0.0.1 or localhost")
        return True

    def do_GET(self) -> None:
        if not self._refused():
            super().do_GET()

    def do_HEAD(self) -> None:
        if not self._refused():
            super().do_HEAD()


def serve_folder(folder: Path, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server for ``folder`` bound to 127.0.0.1 (``port`` 0 picks a free one); call ``serve_forever``."""
    folder = Path(folder).resolve()
    if not (folder / "index.html").is_file():
        raise UserError(f"no index.html in {folder}: build the report first with `harnessfit report`")
    handler = functools.partial(_QuietHandler, directory=str(folder))
    try:
        return ThreadingHTTPServer((HOST, port), handler)
    except OSError as exc:
        raise UserError(
            f"cannot listen on {HOST}:{port} ({exc.strerror or exc}); pass another --port, or --port 0 for a free one"
        ) from exc
