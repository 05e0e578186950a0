"""A scripted OpenAI-compatible model endpoint: it answers each chat request with the next planned reply.

Used where a known model behaviour is needed with the real harness on the other end: capturing the harness card
(Pi must be made to call tools, including malformed calls), tests, and eval smoke runs. It logs every request body
so callers can read exactly what the harness sent. Serves ``GET /v1/models`` and ``POST /v1/chat/completions``
(OpenAI SSE streaming when ``stream`` is true, one JSON body otherwise) on 127.0.0.1 in a background thread.

It lives in ``harness`` because capturing the card drives the real harness with it (``harness.pi.capture``), and
``harness`` sits below ``serve``; ``harnessfit.serve.scripted`` names the same classes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

__all__ = ["Reply", "ScriptedEndpoint"]

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


class _ScriptError(Exception):
    pass


class ScriptedEndpoint:
    """Context manager serving planned replies; ``requests`` keeps every request body in arrival order."""

    def __init__(
        self,
        responder: Responder,
        model_id: str = "scripted",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._responder = responder
        self.model_id = model_id
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    # -- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> ScriptedEndpoint:
        if self._server is not None:
            return self
        endpoint = self

        class Handler(_Handler):
            owner = endpoint

        self._stopping.clear()
        server = ThreadingHTTPServer((self._host, self._port), Handler)
        server.daemon_threads = True
        self._server = server
        host, port = server.server_address[:2]
        self.base_url = f"http://{host}:{port}/v1"
        self._thread = threading.Thread(target=server.serve_forever, name="scripted-endpoint", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- script ----------------------------------------------------------------------------------------------
    def _next(self, body: dict[str, Any]) -> tuple[int, Reply]:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
        responder = self._responder
        if callable(responder):
            try:
                reply = responder(body, index)
            except Exception as exc:  # a broken responder is reported to the client, not swallowed
                raise _ScriptError(f"scripted responder failed on request {index + 1}: {exc!r}") from exc
        else:
            if index >= len(responder):
                raise _ScriptError(
                    f"scripted endpoint ran out of replies: script has {len(responder)}, "
                    f"this is request {index + 1}"
                )
            reply = responder[index]
        if not isinstance(reply, Reply):
            raise _ScriptError(f"scripted responder returned {type(reply).__name__}, not Reply")
        return index, reply


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


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedEndpoint
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr logging
        return

    # -- helpers ---------------------------------------------------------------------------------------------
    def _json(self, status: int, obj: Any) -> None:
        data = orjson.dumps(obj)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"message": message, "type": "server_error", "code": status}})

    # -- routes ----------------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [{"id": self.owner.model_id, "object": "model", "owned_by": "harnessfit"}]})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route {self.path}")
            return
        try:
            body = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            self._error(400, "request body is not JSON")
            return
        if not isinstance(body, dict):
            self._error(400, "request body is not a JSON object")
            return
        try:
            index, reply = self.owner._next(body)
        except _ScriptError as exc:
            self._error(500, str(exc))
            return
        if reply.error is not None:
            self._error(reply.status, reply.error)
            return
        if body.get("stream"):
            self._stream(body, index, reply)
        else:
            self._complete(body, index, reply)

    def _complete(self, body: dict[str, Any], index: int, reply: Reply) -> None:
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
        self._json(
            200,
            {
                "id": f"chatcmpl-scripted-{index + 1}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model") or self.owner.model_id,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": _usage(body, reply),
            },
        )

    def _stream(self, body: dict[str, Any], index: int, reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        model = body.get("model") or self.owner.model_id
        cid = f"chatcmpl-scripted-{index + 1}"

        def chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: dict | None = None) -> bytes:
            obj: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model}
            obj["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
            if usage is not None:
                obj["usage"] = usage
            return b"data: " + orjson.dumps(obj) + b"\n\n"

        try:
            self.wfile.write(chunk({"role": "assistant", "content": ""}))
            if reply.reasoning:
                self.wfile.write(chunk({"reasoning_content": reply.reasoning}))
            if reply.text:
                for piece in _pieces(reply.text, 32):
                    self.wfile.write(chunk({"content": piece}))
            if reply.endless:
                stopping = self.owner._stopping
                while not stopping.is_set():
                    self.wfile.write(chunk({"content": "and on "}))
                    self.wfile.flush()
                    time.sleep(0.001)
                return
            for k, (name, arguments) in enumerate(reply.tool_calls):
                head = {"index": k, "id": _tool_call_id(body, k), "type": "function", "function": {"name": name, "arguments": ""}}
                self.wfile.write(chunk({"tool_calls": [head]}))
                for piece in _pieces(arguments, _ARG_PIECE):
                    self.wfile.write(chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]}))
            self.wfile.write(chunk({}, reply.finish()))
            if (body.get("stream_options") or {}).get("include_usage"):
                self.wfile.write(chunk(None, usage=_usage(body, reply)))
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            return  # the client went away (expected for endless replies)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or []
