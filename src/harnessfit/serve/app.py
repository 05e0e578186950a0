"""The built-in backend as a backend of the one endpoint server (``harnessfit.endpoint``): ``/v1/models``,
``/v1/chat/completions`` (streaming SSE and plain JSON), plus ``/health``.

Why these shapes: Pi's ``openai-completions`` provider is the client. It streams, asks for a usage chunk
(``stream_options.include_usage``), sends ``max_completion_tokens`` and reads ``delta.tool_calls``. A tool call is
emitted as one complete delta (id, name, full arguments) when its ``</tool_call>`` arrives, never piecewise, so a
client cannot see half a call. Every refusal is a 4xx with an OpenAI-style ``{"error": {"message": …}}`` body
(an unexpected failure a 500 with the same shape, never plain text).

A web page must not be able to drive this local server: its ``EndpointOptions`` ask the server for a loopback
``Host`` and ``Origin``, an ``application/json`` chat body of at most ``max_body_bytes`` and a bounded queue
(``endpoint.app`` says why). When the client of a stream disconnects, its generation is cancelled; ``/health``
answers 503 while the engine is stuck (``Engine.health``).
"""

from __future__ import annotations

import hashlib
import itertools
import secrets
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import orjson
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from harnessfit.endpoint import (
    DEFAULT_MAX_QUEUE,
    LOOPBACK_HOSTS,
    MAX_BODY_BYTES,
    ApiError,
    EndpointOptions,
    create_endpoint_app,
)
from harnessfit.models.toolcalls import ParsedToolCall, ToolCallStream
from harnessfit.serve.capture import CaptureStore, episode_key
from harnessfit.serve.engine import Engine, GenerationResult
from harnessfit.serve.protocol import ChatRequest, parse_chat_request, wire_request
from harnessfit.serve.token_api import token_fields

__all__ = ["create_app", "EngineBackend", "MAX_BODY_BYTES", "LOOPBACK_HOSTS"]


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

    def __init__(
        self, engine: Engine, request: ChatRequest, episode: str | None = None, store: CaptureStore | None = None
    ) -> None:
        if request.model != engine.model_id:
            raise ApiError(
                404,
                f"model {request.model!r} is not served here; this server serves {engine.model_id!r}",
                param="model",
                code="model_not_found",
            )
        self.request = request
        self.prompt_ids = engine.render(request)
        self.budget = engine.completion_budget(request, len(self.prompt_ids))
        self.result = GenerationResult(prompt_tokens=len(self.prompt_ids))
        self.cancel = threading.Event()
        seed = request.seed
        self.temperature = request.temperature if request.temperature is not None else engine.default_temperature
        self.deltas = engine.generate(
            self.prompt_ids,
            max_new_tokens=self.budget,
            temperature=self.temperature,
            top_p=request.top_p,
            seed=seed,
            result=self.result,
            cancel=self.cancel,
            request=request,
        )
        self.nonce = _request_nonce()
        self.completion_id = f"chatcmpl-{self.nonce}"
        self.created = int(time.time())
        self.episode = episode  # the capture key (``serve.capture``); None when the server does not capture
        self.cancelled_by_client = False
        self.engine = engine
        self.store = store

    @property
    def stream(self) -> bool:
        return self.request.stream

    def complete(self) -> dict[str, Any]:
        """The whole answer, recorded when the server captures."""
        answer = _complete(self.engine, self)
        message = answer["choices"][0]["message"]
        _capture(
            self.store, self.engine, self, _response_summary(self, message.get("tool_calls") or [], message["content"])
        )
        return answer

    def events(self) -> Iterator[bytes]:
        return _stream(self.engine, self, self.store)

    def close(self) -> None:
        """Cancel the generation: the engine is freed at its next token."""
        self.cancel.set()


def _capture(store: CaptureStore | None, engine: Engine, prep: _Prepared, response: dict[str, Any]) -> None:
    """Record what the engine sampled for this request (a generation cut short is recorded, marked so)."""
    result = prep.result
    if store is None or prep.episode is None or result.sampled_ids is None or result.logprobs is None:
        return
    store.record(
        prep.episode,
        prompt_ids=prep.prompt_ids,
        sampled_ids=result.sampled_ids,
        logprobs=result.logprobs,
        request=wire_request(prep.request),
        response=response,
        metadata={
            "model_id": engine.model_id,
            "completion_id": prep.completion_id,
            "finish_reason": result.finish_reason,
            "complete": not prep.cancelled_by_client,
            "sampling": {"temperature": prep.temperature or 0.0, "top_p": prep.request.top_p or 1.0},
            "stop_ids": engine.stop_ids,
            "published": getattr(engine, "published", None) or {},
        },
    )


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
    return {
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(prep.result, len(calls))}],
        "text": prep.result.text,
        "finish_reason": _finish(prep.result, len(calls)),
        "tool_calls": len(calls),
    }


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


def _model_card(engine: Engine) -> dict[str, Any]:
    card = {"id": engine.model_id, "object": "model", "created": 0, "owned_by": "harnessfit"}
    if engine.context_window:
        card["max_model_len"] = engine.context_window
    if getattr(engine, "published", None):
        card["harnessfit"] = engine.published  # the harness the model was trained for (None: a base model)
    return {"object": "list", "data": [card]}


class EngineBackend:
    """The built-in engine as a ``ChatBackend`` of the endpoint server; with ``capture`` every answered request's
    sampled tokens are recorded per episode (``serve.capture``)."""

    def __init__(self, engine: Engine, options: EndpointOptions, capture: CaptureStore | None = None) -> None:
        self.engine = engine
        self.options = options
        self.capture = capture

    def models(self) -> dict[str, Any]:
        return _model_card(self.engine)

    def prepare(self, body: bytes, headers: Mapping[str, str]) -> _Prepared:
        parsed = parse_chat_request(body)
        episode = episode_key(headers.get("authorization")) if self.capture is not None else None
        return _Prepared(self.engine, parsed, episode, self.capture)

    def error_body(self, error: ApiError) -> dict[str, Any]:
        return error.body()

    def unrouted(self, method: str, path: str, query: str, status: int, detail: str) -> ApiError:
        return ApiError(status, f"{detail}: {method} {path}")


ENGINE_OPTIONS = EndpointOptions(max_queue=DEFAULT_MAX_QUEUE)


def create_app(
    engine: Engine,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    max_queue: int = DEFAULT_MAX_QUEUE,
    capture: CaptureStore | None = None,
) -> FastAPI:
    """A FastAPI app serving ``engine`` (this module is imported only by the server process); at most ``max_queue``
    chat requests are admitted at once (``endpoint.admission``), the others get 429 with ``Retry-After``. With
    ``capture`` every answered request's sampled tokens are recorded per episode (``serve.capture``)."""
    if capture is not None:
        engine.capture_logprobs = True
    options = replace(ENGINE_OPTIONS, max_body_bytes=max_body_bytes, max_queue=max_queue)
    app = create_endpoint_app(EngineBackend(engine, options, capture), title="harnessfit built-in backend")
    admission = app.state.admission

    @app.get("/health")
    async def health() -> JSONResponse:
        state = {**engine.health(), "queue": admission.state()}
        return JSONResponse(state, status_code=200 if state["status"] == "ok" else 503)

    return app
