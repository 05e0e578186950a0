"""The OpenAI-compatible HTTP surface of the built-in backend (FastAPI): ``/v1/models``, ``/v1/chat/completions``
(streaming SSE and plain JSON), ``/health``.

Why these shapes: Pi's ``openai-completions`` provider is the client. It streams, asks for a usage chunk
(``stream_options.include_usage``), sends ``max_completion_tokens`` and reads ``delta.tool_calls``. A tool call is
emitted as one complete delta (id, name, full arguments) when its ``</tool_call>`` arrives, never piecewise, so a
client cannot see half a call. Every refusal is a 4xx with an OpenAI-style ``{"error": {"message": …}}`` body.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from harnessfit.serve.engine import Engine, GenerationResult
from harnessfit.serve.protocol import ApiError, ChatRequest, parse_chat_request
from harnessfit.serve.toolcalls import ParsedToolCall, ToolCallStream

__all__ = ["create_app"]


def _call_id(prompt_ids: list[int], index: int, call: ParsedToolCall) -> str:
    h = hashlib.sha256()
    h.update(orjson.dumps([prompt_ids, index, call.name, call.arguments]))
    return "call_" + h.hexdigest()[:24]


def _wire_call(prompt_ids: list[int], index: int, call: ParsedToolCall) -> dict[str, Any]:
    return {
        "id": _call_id(prompt_ids, index, call),
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

    def __init__(self, engine: Engine, request: ChatRequest) -> None:
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
        self.deltas = engine.generate(
            self.prompt_ids, max_new_tokens=self.budget, temperature=request.temperature, top_p=request.top_p,
            seed=seed, result=self.result, cancel=self.cancel, request=request,
        )
        digest = hashlib.sha256(orjson.dumps(self.prompt_ids)).hexdigest()[:24]
        self.completion_id = f"chatcmpl-{digest}"
        self.created = int(time.time())


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
        message["tool_calls"] = [_wire_call(prep.prompt_ids, i, c) for i, c in enumerate(calls)]
    return {
        "id": prep.completion_id,
        "object": "chat.completion",
        "created": prep.created,
        "model": engine.model_id,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(prep.result, len(calls))}],
        "usage": _usage(prep.result),
    }


def _sse(obj: Any) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _stream(engine: Engine, prep: _Prepared) -> Iterator[bytes]:
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

    def events(items: list[tuple[str, object]]) -> Iterator[bytes]:
        nonlocal n_calls
        for kind, value in items:
            if kind == "content":
                yield chunk({"content": value})
            else:
                call = _wire_call(prep.prompt_ids, n_calls, value)  # type: ignore[arg-type]
                yield chunk({"tool_calls": [{"index": n_calls, **call}]})
                n_calls += 1

    try:
        yield chunk({"role": "assistant", "content": ""})
        for delta in prep.deltas:
            yield from events(splitter.feed(delta))
        yield from events(splitter.finish())
        yield chunk({}, _finish(prep.result, n_calls))
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


def create_app(engine: Engine):
    """A FastAPI app serving ``engine`` (this module is imported only by the server process)."""
    app = FastAPI(title="harnessfit built-in backend", docs_url=None, redoc_url=None, openapi_url=None)

    def error(exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error(ApiError(exc.status_code, f"{exc.detail}: {_request.method} {_request.url.path}"))

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok", "model": engine.model_id}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        card = {"id": engine.model_id, "object": "model", "created": 0, "owned_by": "harnessfit"}
        if engine.context_window:
            card["max_model_len"] = engine.context_window
        return {"object": "list", "data": [card]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        body = await request.body()
        try:
            parsed = parse_chat_request(body)
            prep = await run_in_threadpool(_Prepared, engine, parsed)
        except ApiError as exc:
            return error(exc)
        if parsed.stream:
            return StreamingResponse(
                _stream(engine, prep), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
            )
        try:
            return JSONResponse(await run_in_threadpool(_complete, engine, prep))
        except ApiError as exc:
            return error(exc)

    return app
