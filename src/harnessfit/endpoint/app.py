"""The one OpenAI-compatible HTTP server (FastAPI) over a ``ChatBackend``: ``GET /v1/models`` and
``POST /v1/chat/completions`` (SSE when the request streams, one JSON body otherwise).

A web page must not be able to drive a local model server: with ``loopback_only`` every request needs a loopback
``Host`` (a DNS-rebinding page sends its own name) and, when it has an ``Origin``, a loopback one (a cross-origin
``fetch``); with ``json_only`` a chat request must be ``application/json`` (a "simple" cross-origin POST cannot set
that type without a preflight); a body over ``max_body_bytes`` is refused. Every refusal is an error response in the
backend's body shape (an unexpected failure a 500 in the same shape, never plain text). A chat request holds its
admission place (``endpoint.admission``) until its answer ends; when the client of a stream disconnects, Starlette
cancels the stream and the prepared chat is closed.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from harnessfit.endpoint.admission import Admission
from harnessfit.endpoint.backend import ChatBackend, PreparedChat
from harnessfit.endpoint.errors import ApiError

__all__ = ["create_endpoint_app", "LOOPBACK_HOSTS"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def _host_name(value: str) -> str:
    """The host part of a ``Host`` header value (``[::1]:8000`` → ``::1``), lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _refusal(headers: dict[str, str]) -> str | None:
    """Why a request's Host/Origin show it may come from a web page, or None."""
    host = headers.get("host")
    if host is None or _host_name(host) not in LOOPBACK_HOSTS:
        return f"Host {host!r} is not allowed: this local server answers only requests addressed to 127.0.0.1"
    origin = headers.get("origin")
    if origin is not None:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or (parts.hostname or "") not in LOOPBACK_HOSTS:
            return f"Origin {origin!r} is not allowed: cross-origin requests to this local server are refused"
    return None


class _LoopbackOnly:
    """ASGI middleware: refuse (403, in the backend's error shape) any request whose Host or Origin is not
    loopback."""

    def __init__(self, app: Any, backend: ChatBackend) -> None:
        self.app = app
        self.backend = backend

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            why = _refusal(headers)
            if why is not None:
                response = _error(self.backend, ApiError(403, why, code="forbidden_host"))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _error(backend: ChatBackend, exc: ApiError, headers: dict[str, str] | None = None) -> JSONResponse:
    return backend.options.json_response(backend.error_body(exc), status_code=exc.status, headers=headers)


def _media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


async def _read_body(request: Request, limit: int | None) -> bytes:
    declared = request.headers.get("content-length")
    if limit is not None and declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"request body of {int(declared)} bytes is over this server's limit of {limit} bytes")
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if limit is not None and len(body) > limit:
            raise ApiError(413, f"request body is over this server's limit of {limit} bytes")
    return bytes(body)


def _busy(backend: ChatBackend, admission: Admission) -> JSONResponse:
    wait = admission.retry_after()
    full = ApiError(
        429,
        f"the server is busy: {admission.limit} requests are admitted already; retry in {wait} s",
        code="rate_limit_exceeded",
    )
    return _error(backend, full, headers={"Retry-After": str(wait)})


async def _events(prep: PreparedChat, leave: Callable[[], None]) -> AsyncIterator[bytes]:
    """The prepared chat's events, each pulled in a worker thread. When the client disconnects, Starlette cancels
    this generator; ``finally`` then closes the prepared chat (the engine stops at its next token) and leaves the
    admission queue."""
    chunks = prep.events()
    try:
        while True:
            chunk = await run_in_threadpool(next, chunks, None)
            if chunk is None:
                return
            yield chunk
    finally:
        prep.close()
        leave()


async def _prepare(request: Request, backend: ChatBackend) -> PreparedChat:
    """Every check before generation: content type, body size, then the backend's own (all ``ApiError``)."""
    options = backend.options
    if options.json_only:
        kind = _media_type(request.headers.get("content-type"))
        if kind != "application/json":
            raise ApiError(415, f"request body must be application/json (got {kind or 'no content type'!r})")
    body = await _read_body(request, options.max_body_bytes)
    return await run_in_threadpool(backend.prepare, body, request.headers)


async def _chat(request: Request, backend: ChatBackend, admission: Admission | None) -> Response:
    """``POST /v1/chat/completions``: admit, prepare (every refusal before any generation), then stream or answer in
    one body; the admission place is left however the request ends."""
    since = admission.enter() if admission is not None else 0.0
    if admission is not None and since is None:
        return _busy(backend, admission)

    def leave() -> None:
        if admission is not None and since is not None:
            admission.leave(since)

    try:
        prep = await _prepare(request, backend)
    except ApiError as exc:
        leave()
        return _error(backend, exc)
    except ClientDisconnect:  # the client left before its body was complete: one line, no traceback
        leave()
        sys.stderr.write("serve: a client left before sending its whole request body; nothing was generated\n")
        return Response(status_code=400)
    except BaseException:
        leave()
        raise
    if prep.stream:
        return StreamingResponse(
            _events(prep, leave), media_type="text/event-stream", headers=dict(backend.options.sse_headers)
        )
    try:
        answer = await run_in_threadpool(prep.complete)
        return backend.options.json_response(answer)
    except ApiError as exc:
        return _error(backend, exc)
    finally:
        prep.close()
        leave()


def create_endpoint_app(backend: ChatBackend, *, title: str = "harnessfit endpoint") -> FastAPI:
    """A FastAPI app serving ``backend`` as its ``options`` say; ``app.state.admission`` is the admission queue
    (None without ``max_queue``)."""
    options = backend.options
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None)
    admission = Admission(options.max_queue) if options.max_queue is not None else None
    app.state.admission = admission

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        unrouted = backend.unrouted(request.method, request.url.path, request.url.query, exc.status_code, exc.detail)
        return _error(backend, unrouted)

    @app.exception_handler(Exception)
    async def _server_error(_request: Request, exc: Exception) -> JSONResponse:
        return _error(backend, ApiError(500, f"internal error: {type(exc).__name__}: {exc}"[:500]))

    async def models() -> JSONResponse:
        return options.json_response(backend.models())

    async def chat(request: Request) -> Response:
        return await _chat(request, backend, admission)

    for path in options.model_paths:
        app.add_api_route(path, models, methods=["GET"])
    for path in options.chat_paths:
        app.add_api_route(path, chat, methods=["POST"])
    if options.loopback_only:
        app.add_middleware(_LoopbackOnly, backend=backend)
    return app
