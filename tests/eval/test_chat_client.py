"""The OpenAI-compatible client of raw suites, probes and judges: the key goes only where named, failures are one
``ChatError`` line, replies come back with content, calls, finish reason and usage."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from harnessfit.eval.client import ChatError, api_key_from_env, chat


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str | None, dict]]] = []
    status = 200
    body: bytes = b""

    def log_message(self, *args) -> None:
        return

    def do_POST(self) -> None:
        data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((self.headers.get("Authorization"), data))
        self.send_response(type(self).status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(type(self).body)))
        self.end_headers()
        self.wfile.write(type(self).body)


@pytest.fixture
def server() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    _Recorder.seen, _Recorder.status = [], 200
    _Recorder.body = json.dumps(
        {
            "choices": [
                {
                    "message": {
                        "content": "hi",
                        "reasoning_content": "hmm",
                        "tool_calls": [
                            {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
                        ],
                    },
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        }
    ).encode()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_key_only_when_named_and_reply_fields(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HFTEST_KEY", "k-123")
    reply = chat(
        server, "m", [{"role": "user", "content": "x"}], max_tokens=5, seed=3, api_key=api_key_from_env("HFTEST_KEY")
    )
    chat(server, "m", [{"role": "user", "content": "x"}], max_tokens=5)
    (auth1, body1), (auth2, body2) = _Recorder.seen
    assert auth1 == "Bearer k-123" and auth2 is None
    assert body1["seed"] == 3 and body1["stream"] is False and body1["max_tokens"] == 5 and "seed" not in body2
    assert (reply.content, reply.reasoning, reply.finish_reason) == ("hi", "hmm", "stop")
    assert reply.tool_calls[0]["function"]["name"] == "bash" and reply.completion_tokens == 1
    assert api_key_from_env(None) is None and api_key_from_env("HFTEST_UNSET_VAR") is None


def test_failures_are_chat_errors(server: str) -> None:
    _Recorder.status, _Recorder.body = 500, json.dumps({"error": {"message": "exploded"}}).encode()
    with pytest.raises(ChatError, match="HTTP 500: exploded"):
        chat(server, "m", [], max_tokens=1)
    _Recorder.status, _Recorder.body = 200, b'{"nothing": 1}'
    with pytest.raises(ChatError, match="no choices"):
        chat(server, "m", [], max_tokens=1)
    with pytest.raises(ChatError, match="ConnectError"):
        chat("http://127.0.0.1:9/v1", "m", [], max_tokens=1, timeout=5)
