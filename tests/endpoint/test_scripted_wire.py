"""The scripted endpoint's exact wire bytes, recorded once and kept: capturing the harness card drives the real Pi
against this endpoint and the committed cards depend on what it sends (ids ``call_001_0`` / ``chatcmpl-scripted-N``,
``created: 0``, tool-call arguments in 24-character pieces, ``reasoning_content``, endless replies, planned error
statuses, any JSON body accepted whatever its content type). Every exchange below — status, content type and body
bytes — must equal ``scripted_wire.json``, which was recorded from the stdlib server this endpoint replaced; so must
the request log (every request body as sent, in order).

Regenerate only for an intended change of the wire: ``python tests/endpoint/test_scripted_wire.py --record``.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import httpx
import orjson

from harnessfit.harness.scripted import Reply, ScriptedEndpoint

GOLDEN = Path(__file__).with_name("scripted_wire.json")
LONG_ARGS = '{"path": "src/app/main.py", "old_text": "déjà vu — naïve", "new_text": "x"'  # truncated on purpose
ENDLESS_BYTES = 4000  # the first bytes of the endless stream that are compared

SCRIPT = [
    Reply(text="Hello there."),
    Reply(tool_calls=[("read", '{"path":"a.txt"}')], reasoning="hmm"),
    Reply(
        text="Let me check the file for you — it is ünïcode.",
        reasoning="think",
        tool_calls=[("edit", LONG_ARGS), ("bash", "{}")],
    ),
    Reply(text="cut", finish_reason="length"),
    Reply(error="overloaded", status=503),
    Reply(text="plain text body"),
    Reply(text="start ", endless=True),
    Reply(text="aliased"),
    Reply(tool_calls=[("write", '{"path":"b.txt","content":"' + "y" * 70 + '"}')]),
    Reply(text="start ", endless=True),
]

_CHAT = "/v1/chat/completions"
_TURN2 = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}]
# (method, path, content type, body bytes or None, read at most this many bytes of the answer or None)
EXCHANGES: list[tuple[str, str, str | None, bytes | None, int | None]] = [
    ("GET", "/v1/models", None, None, None),
    ("GET", "/models/", None, None, None),
    (
        "POST",
        _CHAT,
        "application/json",
        orjson.dumps({"model": "m-x", "messages": [{"role": "user", "content": "hi"}]}),
        None,
    ),
    ("POST", _CHAT, "application/json", orjson.dumps({"model": "m-x", "messages": _TURN2, "n": 1}), None),
    (
        "POST",
        _CHAT,
        "application/json",
        orjson.dumps({"messages": _TURN2, "stream": True, "stream_options": {"include_usage": True}}),
        None,
    ),
    ("POST", _CHAT, "application/json", orjson.dumps({"model": "other", "messages": [], "stream": True}), None),
    ("POST", _CHAT, "application/json", orjson.dumps({"messages": [], "stream": True}), None),
    ("POST", _CHAT, "text/plain", orjson.dumps({"messages": [{"role": "user", "content": "ü"}]}), None),
    ("POST", _CHAT, "application/json", orjson.dumps({"messages": []}), None),
    ("POST", "/chat/completions/", None, orjson.dumps({"messages": []}), None),
    (
        "POST",
        _CHAT,
        "application/json",
        orjson.dumps({"messages": [], "stream": True, "stream_options": {"include_usage": True}}),
        None,
    ),
    ("POST", _CHAT, "application/json", orjson.dumps({"messages": [], "stream": True}), ENDLESS_BYTES),
    ("POST", _CHAT, "application/json", orjson.dumps({"messages": []}), None),  # the script has run out
    ("POST", _CHAT, "application/json", b"{oops", None),
    ("POST", _CHAT, "application/json", b"[1, 2]", None),
    ("POST", _CHAT, "application/json", b"", None),
    ("GET", "/v1/nothing", None, None, None),
    ("POST", "/v1/nothing", "application/json", b"{}", None),
    ("GET", _CHAT, None, None, None),
]


def _exchange(
    client: httpx.Client, base: str, method: str, path: str, kind: str | None, body: bytes | None, limit: int | None
) -> dict:
    headers = {"content-type": kind} if kind else {}
    with client.stream(method, base + path, content=body, headers=headers) as resp:
        data = b""
        for piece in resp.iter_raw():
            data += piece
            if limit is not None and len(data) >= limit:
                data = data[:limit]
                break
    return {
        "request": f"{method} {path}",
        "status": resp.status_code,
        "content_type": resp.headers.get("content-type"),
        "body": base64.b64encode(data).decode(),
    }


def _endless_plain(ep: ScriptedEndpoint, client: httpx.Client) -> dict:
    """A second endpoint run: an endless reply asked without streaming is one long body."""
    return _exchange(
        client, ep.base_url.removesuffix("/v1"), "POST", _CHAT, "application/json", b'{"messages": []}', None
    )


def record() -> dict:
    with ScriptedEndpoint(SCRIPT, model_id="m-x") as ep, httpx.Client(timeout=10) as client:
        base = ep.base_url.removesuffix("/v1")
        exchanges = [_exchange(client, base, *x) for x in EXCHANGES]
        log = [orjson.dumps(b).decode() for b in ep.requests]
    with ScriptedEndpoint([Reply(text="go ", endless=True)]) as ep2, httpx.Client(timeout=10) as client:
        exchanges.append(_endless_plain(ep2, client))
        log.append(orjson.dumps(ep2.requests).decode())
    return {"exchanges": exchanges, "requests": log}


def test_scripted_endpoint_bytes_equal_the_recorded_wire() -> None:
    want = orjson.loads(GOLDEN.read_bytes())
    got = record()
    assert got["requests"] == want["requests"]
    for g, w in zip(got["exchanges"], want["exchanges"], strict=True):
        assert g["request"] == w["request"]
        assert (g["status"], g["content_type"]) == (w["status"], w["content_type"]), g["request"]
        assert base64.b64decode(g["body"]) == base64.b64decode(w["body"]), g["request"]


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    GOLDEN.write_bytes(orjson.dumps(record(), option=orjson.OPT_INDENT_2) + b"\n")
