"""The OpenAI-compatible HTTP surface of the built-in backend (FastAPI): ``/v1/models``, ``/v1/chat/completions``
(streaming SSE and plain JSON), ``/health``.

Why these shapes: Pi's ``openai-completions`` provider is the client. It streams, asks for a usage chunk
(``stream_options.include_usage``), sends ``max_completion_tokens`` and reads ``delta.tool_calls``. A tool call is
emitted as one complete delta (id, name, full arguments) when its ``</tool_call>`` arrives, never piecewise, so a
client cannot see half a call. Every refusal is a 4xx with an OpenAI-style ``{"error": {"message": …}}`` body
(an unexpected failure a 500 with the same shape, never plain text).

A web page must not be able to drive this local server: every request needs a loopback ``Host`` (a DNS-rebinding
page sends its own name) and, when it has an ``Origin``, a loopback one (a cross-origin ``fetch``); a chat request
must be ``application/json`` (a "simple" cross-origin POST cannot set that type without a preflight) and at most
``max_body_bytes`` long. When the client of a stream disconnects, its generation is cancelled; ``/health``
answers 503 while the engine is stuck (``Engine.health``).
"""

from __future__ import annotations

import hashlib
import itertools
import secrets
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import orjson
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from harnessfit.models.toolcalls import ParsedToolCall, ToolCallStream
from harnessfit.serve.admission import DEFAULT_MAX_QUEUE, Admission
from harnessfit.serve.capture import CaptureStore, episode_key
from harnessfit.serve.engine import Engine, GenerationResult
from harnessfit.serve.protocol import ApiError, ChatRequest, parse_chat_request, wire_request
from harnessfit.serve.token_api import token_fields

__all__ = ["create_app", "MAX_BODY_BYTES", "LOOPBACK_HOSTS"]

MAX_BODY_BYTES = 8 * 1024 * 1024
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
    """ASGI middleware: refuse (403, OpenAI-style) any request whose Host or Origin is not loopback."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            why = _refusal(headers)
            if why is not None:
                response = JSONResponse(ApiError(403, why, code="forbidden_host").body(), status_code=403)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


# ids of completions and tool calls: unique per request (a per-process random part and a counter), so two identical
# requests never share one — an id derived from the prompt alone would repeat across episodes and retries
_PROCESS_NONCE = secrets.token_hex(4)
_REQUESTS = itertools.count(1)


def _request_nonce() -> str:
    return f"{_PROCESS_NONCE}{next(_REQUESTS):08x}"


def _call_id(nonce: str, index: int, call: ParsedToolCall) -> str:
    h = hashlib.sha256()
    h.update(orjson.dumps([nonce, index, call.name, call.arguments]))
    return "call_" + h.hexdigest()[:24]


def _wire_call(nonce: str, index: int, call: ParsedToolCall) -> dict[str, Any]:
    return {
        "id": _call_id(nonce, index, call),
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def _usage(result: GenerationResult) -> dict[str, int]:
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }


def _finish(result: GenerationResult, n_calls: int) -> str:
    return "tool_calls" if n_calls else result.finish_reason


class _Prepared:
    """A validated request, rendered and budgeted: everything that can fail with a 4xx has happened."""

    def __init__(self, engine: Engine, request: ChatRequest, episode: str | None = None) -> None:
        if request.model != engine.model_id:
            raise ApiError(
                404, f"model {request.model!r} is not served here; this server serves {engine.model_id!r}",
                param="model", code="model_not_found",
            )
        self.request = request
        self.prompt_ids = engine.render(request)
        self.budget = engine.completion_budget(request, len(self.prompt_ids))
        self.result = GenerationResult(prompt_tokens=len(self.prompt_ids))
        self.cancel = threading.Event()
        seed = request.seed
        self.temperature = request.temperature if request.temperature is not None else engine.default_temperature
        self.deltas = engine.generate(
            self.prompt_ids, max_new_tokens=self.budget, temperature=self.temperature, top_p=request.top_p,
            seed=seed, result=self.result, cancel=self.cancel, request=request,
        )
        self.nonce = _request_nonce()
        self.completion_id = f"chatcmpl-{self.nonce}"
        self.created = int(time.time())
        self.episode = episode  # the capture key (``serve.capture``); None when the server does not capture
        self.cancelled_by_client = False


def _capture(store: CaptureStore | None, engine: Engine, prep: _Prepared, response: dict[str, Any]) -> None:
    """Record what the engine sampled for this request (a generation cut short is recorded, marked so)."""
    result = prep.result
    if store is None or prep.episode is None or result.sampled_ids is None or result.logprobs is None:
        return
    store.record(prep.episode, prompt_ids=prep.prompt_ids, sampled_ids=result.sampled_ids, logprobs=result.logprobs,
                 request=wire_request(prep.request),
                 response=response,
                 metadata={"model_id": engine.model_id, "completion_id": prep.completion_id,
                           "finish_reason": result.finish_reason, "complete": not prep.cancelled_by_client,
                           "sampling": {"temperature": prep.temperature or 0.0, "top_p": prep.request.top_p or 1.0},
                           "stop_ids": engine.stop_ids, "published": getattr(engine, "published", None) or {}})


def _complete(engine: Engine, prep: _Prepared) -> dict[str, Any]:
    splitter = ToolCallStream()
    content: list[str] = []
    calls: list[ParsedToolCall] = []
    for delta in prep.deltas:
        for kind, value in splitter.feed(delta):
            (content if kind == "content" else calls).append(value)  # type: ignore[arg-type]
    for kind, value in splitter.finish():
        (content if kind == "content" else calls).append(value)  # type: ignore[arg-type]
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [_wire_call(prep.nonce, i, c) for i, c in enumerate(calls)]
    top, extra = token_fields(prep.request, engine.tokenizer, prep.prompt_ids, prep.result)  # vLLM's token API
    return {
        "id": prep.completion_id,
        "object": "chat.completion",
        "created": prep.created,
        "model": engine.model_id,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(prep.result, len(calls)), **extra}],
        "usage": _usage(prep.result),
        **top,
    }


def _response_summary(prep: _Prepared, calls: list[dict[str, Any]], content: str | None) -> dict[str, Any]:
    """A captured turn's ``response``: the reply as the client got it, in the chat-completion shape OpenEnv's
    ``TraceEntry`` names (``choices[0].message``), plus the decoded text of the sampled ids."""
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = calls
    return {"choices": [{"index": 0, "message": message, "finish_reason": _finish(prep.result, len(calls))}],
            "text": prep.result.text, "finish_reason": _finish(prep.result, len(calls)), "tool_calls": len(calls)}


def _sse(obj: Any) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _stream(engine: Engine, prep: _Prepared, store: CaptureStore | None = None) -> Iterator[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            {
                "id": prep.completion_id,
                "object": "chat.completion.chunk",
                "created": prep.created,
                "model": engine.model_id,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    splitter = ToolCallStream()
    n_calls = 0
    sent_calls: list[dict[str, Any]] = []
    sent_text: list[str] = []

    def events(items: list[tuple[str, object]]) -> Iterator[bytes]:
        nonlocal n_calls
        for kind, value in items:
            if kind == "content":
                sent_text.append(value)  # type: ignore[arg-type]
                yield chunk({"content": value})
            else:
                call = _wire_call(prep.nonce, n_calls, value)  # type: ignore[arg-type]
                sent_calls.append(call)
                yield chunk({"tool_calls": [{"index": n_calls, **call}]})
                n_calls += 1

    try:
        yield chunk({"role": "assistant", "content": ""})
        for delta in prep.deltas:
            yield from events(splitter.feed(delta))
        yield from events(splitter.finish())
        yield chunk({}, _finish(prep.result, n_calls))
        _capture(store, engine, prep, _response_summary(prep, sent_calls, "".join(sent_text)))
        opts = prep.request.stream_options
        if opts is not None and opts.include_usage:
            yield _sse(
                {
                    "id": prep.completion_id,
                    "object": "chat.completion.chunk",
                    "created": prep.created,
                    "model": engine.model_id,
                    "choices": [],
                    "usage": _usage(prep.result),
                }
            )
    except Exception as exc:  # noqa: BLE001 - headers are sent: report in-band, as OpenAI does
        yield _sse({"error": {"message": f"generation failed: {exc}", "type": "server_error"}})
    finally:
        prep.cancel.set()
    yield b"data: [DONE]\n\n"


async def _stream_async(engine: Engine, prep: _Prepared, store: CaptureStore | None) -> AsyncIterator[bytes]:
    """``_stream`` pulled chunk by chunk in a worker thread. When the client disconnects, Starlette cancels this
    generator; ``finally`` then cancels the generation, which frees the engine at its next token."""
    chunks = _stream(engine, prep, store)
    try:
        while True:
            chunk = await run_in_threadpool(next, chunks, None)
            if chunk is None:
                return
            yield chunk
    finally:
        prep.cancel.set()


def _media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"request body of {int(declared)} bytes is over this server's limit of {limit} bytes")
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise ApiError(413, f"request body is over this server's limit of {limit} bytes")
    return bytes(body)


async def _released(chunks: AsyncIterator[bytes], admission: Admission, since: float) -> AsyncIterator[bytes]:
    """The stream, leaving the admission queue when it ends (finished, failed or the client went away)."""
    try:
        async for chunk in chunks:
            yield chunk
    finally:
        admission.leave(since)


def _error(exc: ApiError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status)


def _model_card(engine: Engine) -> dict[str, Any]:
    card = {"id": engine.model_id, "object": "model", "created": 0, "owned_by": "harnessfit"}
    if engine.context_window:
        card["max_model_len"] = engine.context_window
    if getattr(engine, "published", None):
        card["harnessfit"] = engine.published  # the harness the model was trained for (None: a base model)
    return {"object": "list", "data": [card]}


def _busy(admission: Admission) -> JSONResponse:
    wait = admission.retry_after()
    full = ApiError(429, f"the server is busy: {admission.limit} requests are admitted already; retry in "
                    f"{wait} s", code="rate_limit_exceeded")
    return JSONResponse(full.body(), status_code=429, headers={"Retry-After": str(wait)})


async def _chat(request: Request, engine: Engine, admission: Admission, capture: CaptureStore | None,
                max_body_bytes: int) -> Response:
    """``POST /v1/chat/completions``: admit, validate and prepare (every 4xx before any generation), then stream
    or answer in one body; the admission slot is left however the request ends."""
    since = admission.enter()
    if since is None:
        return _busy(admission)
    try:
        kind = _media_type(request.headers.get("content-type"))
        if kind != "application/json":
            raise ApiError(415, f"request body must be application/json (got {kind or 'no content type'!r})")
        body = await _read_body(request, max_body_bytes)
        parsed = parse_chat_request(body)
        episode = episode_key(request.headers.get("authorization")) if capture is not None else None
        prep = await run_in_threadpool(_Prepared, engine, parsed, episode)
    except ApiError as exc:
        admission.leave(since)
        return _error(exc)
    except ClientDisconnect:  # the client left before its body was complete: one line, no traceback
        admission.leave(since)
        sys.stderr.write("serve: a client left before sending its whole request body; nothing was generated\n")
        return Response(status_code=400)
    except BaseException:
        admission.leave(since)
        raise
    if parsed.stream:
        return StreamingResponse(_released(_stream_async(engine, prep, capture), admission, since),
                                 media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
    try:
        answer = await run_in_threadpool(_complete, engine, prep)
        choice = answer["choices"][0]
        _capture(capture, engine, prep, _response_summary(prep, choice["message"].get("tool_calls") or [],
                                                          choice["message"]["content"]))
        return JSONResponse(answer)
    except ApiError as exc:
        return _error(exc)
    finally:
        prep.cancel.set()
        admission.leave(since)


def create_app(engine: Engine, *, max_body_bytes: int = MAX_BODY_BYTES, max_queue: int = DEFAULT_MAX_QUEUE,
               capture: CaptureStore | None = None):
    """A FastAPI app serving ``engine`` (this module is imported only by the server process); at most ``max_queue``
    chat requests are admitted at once (``serve.admission``), the others get 429 with ``Retry-After``. With
    ``capture`` every answered request's sampled tokens are recorded per episode (``serve.capture``)."""
    if capture is not None:
        engine.capture_logprobs = True
    app = FastAPI(title="harnessfit built-in backend", docs_url=None, redoc_url=None, openapi_url=None)
    admission = Admission(max_queue)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(ApiError(exc.status_code, f"{exc.detail}: {_request.method} {_request.url.path}"))

    @app.exception_handler(Exception)
    async def _server_error(_request: Request, exc: Exception) -> JSONResponse:
        return _error(ApiError(500, f"internal error: {type(exc).__name__}: {exc}"[:500]))

    @app.get("/health")
    async def health() -> JSONResponse:
        state = {**engine.health(), "queue": admission.state()}
        return JSONResponse(state, status_code=200 if state["status"] == "ok" else 503)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return _model_card(engine)

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        return await _chat(request, engine, admission, capture, max_body_bytes)

    app.add_middleware(_LoopbackOnly)
    return app
