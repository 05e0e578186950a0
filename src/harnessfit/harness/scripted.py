"""A scripted OpenAI-compatible model endpoint: it answers each chat request with the next planned reply.

Used where a known model behaviour is needed with the real harness on the other end: capturing the harness card
(Pi must be made to call tools, including malformed calls), tests, and eval smoke runs. It logs every request body
so callers can read exactly what the harness sent. Serves ``GET /v1/models`` and ``POST /v1/chat/completions``
(OpenAI SSE streaming when ``stream`` is true, one JSON body otherwise) on 127.0.0.1 in a background thread.

It is a backend of the one endpoint server (``harnessfit.endpoint``), as the built-in engine is; its
``EndpointOptions`` keep the wire the committed harness cards were captured against (any JSON body accepted whatever
its content type, no queue or body limit, paths with or without ``/v1``, orjson bodies, the stdlib server's error
shape), byte for byte (``tests/endpoint/test_scripted_wire.py``). It lives in ``harness`` because capturing the card
drives the real harness with it (``harness.pi.capture``), and ``harness`` sits below ``serve``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from fastapi.responses import JSONResponse

from harnessfit.endpoint import ApiError, BackgroundServer, EndpointOptions, create_endpoint_app

__all__ = ["Reply", "ScriptedBackend", "ScriptedEndpoint", "SCRIPTED_OPTIONS"]

_ARG_PIECE = 24  # tool-call arguments are streamed in pieces of this many characters (concatenation is verbatim)


@dataclass
class Reply:
    """One planned model reply.

    ``tool_calls`` holds ``(name, raw arguments text)``: the text is sent verbatim, so malformed calls (double
    encoded, truncated, wrong names) can be scripted. ``endless`` streams text forever (a runaway model) until the
    client disconnects. ``error`` makes the endpoint answer HTTP ``status`` with that message instead.
    """

    text: str | None = None
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    reasoning: str | None = None
    endless: bool = False
    finish_reason: str | None = None
    error: str | None = None
    status: int = 500

    def finish(self) -> str:
        if self.finish_reason:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


Responder = Sequence[Reply] | Callable[[dict, int], Reply]


class _OrjsonResponse(JSONResponse):
    """JSON bodies as orjson writes them (the scripted endpoint's bytes since its first version)."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def _paths(*paths: str) -> tuple[str, ...]:
    return tuple(p + tail for p in paths for tail in ("", "/"))


SCRIPTED_OPTIONS = EndpointOptions(
    model_paths=_paths("/v1/models", "/models"),
    chat_paths=_paths("/v1/chat/completions", "/chat/completions"),
    loopback_only=False,
    json_only=False,
    max_body_bytes=None,
    max_queue=None,
    json_response=_OrjsonResponse,
    sse_headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "Connection": "close"},
)


class ScriptedBackend:
    """The scripted model as a ``ChatBackend``: each chat request gets the responder's next reply."""

    options = SCRIPTED_OPTIONS

    def __init__(self, responder: Responder, model_id: str) -> None:
        self.responder = responder
        self.model_id = model_id
        self.requests: list[dict[str, Any]] = []
        self.stopping = threading.Event()  # set when the server stops: endless replies end
        self._lock = threading.Lock()

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.model_id, "object": "model", "owned_by": "harnessfit"}]}

    def error_body(self, error: ApiError) -> dict[str, Any]:
        return {"error": {"message": error.message, "type": "server_error", "code": error.status}}

    def unrouted(self, method: str, path: str, query: str, status: int, detail: str) -> ApiError:
        return ApiError(404, f"no route {path}" + (f"?{query}" if query else ""))

    def prepare(self, body: bytes, headers: Mapping[str, str]) -> _ScriptedChat:
        try:
            request = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            raise ApiError(400, "request body is not JSON") from None
        if not isinstance(request, dict):
            raise ApiError(400, "request body is not a JSON object")
        index, reply = self._next(request)
        if reply.error is not None:
            raise ApiError(reply.status, reply.error)
        return _ScriptedChat(request, index, reply, request.get("model") or self.model_id, self.stopping)

    def _next(self, body: dict[str, Any]) -> tuple[int, Reply]:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
        responder = self.responder
        if callable(responder):
            try:
                reply = responder(body, index)
            except Exception as exc:  # a broken responder is reported to the client, not swallowed
                raise ApiError(500, f"scripted responder failed on request {index + 1}: {exc!r}") from exc
        else:
            if index >= len(responder):
                raise ApiError(
                    500,
                    f"scripted endpoint ran out of replies: script has {len(responder)}, this is request {index + 1}",
                )
            reply = responder[index]
        if not isinstance(reply, Reply):
            raise ApiError(500, f"scripted responder returned {type(reply).__name__}, not Reply")
        return index, reply


class ScriptedEndpoint:
    """Context manager serving planned replies; ``requests`` keeps every request body in arrival order."""

    def __init__(
        self,
        responder: Responder,
        model_id: str = "scripted",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.backend = ScriptedBackend(responder, model_id)
        self._host = host
        self._port = port
        self._server: BackgroundServer | None = None
        self.base_url = ""

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.backend.requests

    def start(self) -> ScriptedEndpoint:
        if self._server is not None:
            return self
        self.backend.stopping.clear()
        server = BackgroundServer(
            create_endpoint_app(self.backend, title="harnessfit scripted model"),
            host=self._host,
            port=self._port,
            name="scripted-endpoint",
        )
        port = server.start()
        self._server = server
        self.base_url = f"http://{self._host}:{port}/v1"
        return self

    def stop(self) -> None:
        self.backend.stopping.set()
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> ScriptedEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    """Deterministic token estimate (4 characters a token) so clients that track usage have numbers."""
    prompt = max(1, len(orjson.dumps(body.get("messages", []))) // 4)
    out_chars = len(reply.text or "") + len(reply.reasoning or "") + sum(len(n) + len(a) for n, a in reply.tool_calls)
    completion = max(1, out_chars // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _tool_call_id(body: dict[str, Any], k: int) -> str:
    """``call_<turn>_<k>``: the turn is counted in the conversation the request carries (its assistant messages + 1),
    not across the server's requests, so an episode's ids do not depend on how concurrent episodes interleaved
    (synth sessions are training data: an id that varies run to run would vary the tokens trained on)."""
    turn = 1 + sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant")
    return f"call_{turn:03d}_{k}"


@dataclass
class _ScriptedChat:
    """One planned reply to one request, as one JSON body or as SSE events."""

    body: dict[str, Any]
    index: int
    reply: Reply
    model: str
    stopping: threading.Event

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    def close(self) -> None:
        return

    def complete(self) -> dict[str, Any]:
        body, reply = self.body, self.reply
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        finish = reply.finish()
        if reply.endless:
            message["content"] = (reply.text or "") + "and on " * 512
            finish = "length"
        if reply.reasoning is not None:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": _tool_call_id(body, k), "type": "function", "function": {"name": n, "arguments": a}}
                for k, (n, a) in enumerate(reply.tool_calls)
            ]
        return {
            "id": f"chatcmpl-scripted-{self.index + 1}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(body, reply),
        }

    def _chunk(self, delta: dict[str, Any] | None, finish: str | None = None, usage: dict | None = None) -> bytes:
        obj: dict[str, Any] = {
            "id": f"chatcmpl-scripted-{self.index + 1}",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": self.model,
        }
        obj["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
        if usage is not None:
            obj["usage"] = usage
        return b"data: " + orjson.dumps(obj) + b"\n\n"

    def events(self) -> Iterator[bytes]:
        body, reply, chunk = self.body, self.reply, self._chunk
        yield chunk({"role": "assistant", "content": ""})
        if reply.reasoning:
            yield chunk({"reasoning_content": reply.reasoning})
        if reply.text:
            for piece in _pieces(reply.text, 32):
                yield chunk({"content": piece})
        if reply.endless:  # until the client leaves (the server cancels this stream) or the endpoint stops
            while not self.stopping.is_set():
                yield chunk({"content": "and on "})
                time.sleep(0.001)
            return
        for k, (name, arguments) in enumerate(reply.tool_calls):
            head = {
                "index": k,
                "id": _tool_call_id(body, k),
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            yield chunk({"tool_calls": [head]})
            for piece in _pieces(arguments, _ARG_PIECE):
                yield chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]})
        yield chunk({}, reply.finish())
        if (body.get("stream_options") or {}).get("include_usage"):
            yield chunk(None, usage=_usage(body, reply))
        yield b"data: [DONE]\n\n"


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or []
