"""The built-in server under a careless or hostile client (issue 20, items 5-6): a client that disconnects
mid-stream must not wedge the engine, /health must say when the engine is stuck, and every refusal (a huge seed,
a deeply nested body, an oversized body, a prompt far beyond the context, a non-JSON body, a foreign Host or
Origin) is an OpenAI-style 4xx, never a plain-text 500.

In-process tests drive the FastAPI app with Starlette's TestClient over the tiny scripted GPT-2 of conftest.py;
the disconnect test needs a real server process (``start_server``), where a dropped TCP connection is real.
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("serve-builtin")]

MODEL_ID = "scripted"
BASE = "http://127.0.0.1:8000"


def _body(user: str, **extra) -> dict:
    return {"model": MODEL_ID, "messages": [{"role": "user", "content": user}], **extra}


@pytest.fixture(scope="module")
def model_dir(scripted_factory):
    f = scripted_factory
    im_end = f.token_id("<|im_end|>")
    long_text = " ".join(["token"] * 150)
    scripts = [
        (f.prompt_len(_body("hi")), f.encode("Hello there") + [im_end]),
        (f.prompt_len(_body("tell me a long story please")), f.encode(long_text) + [im_end]),
    ]
    return f.build("robust", scripts, eos_ids=[im_end])


@pytest.fixture(scope="module")
def engine(model_dir):
    from harnessfit.serve.engine import load_engine

    return load_engine(str(model_dir), model_id=MODEL_ID, max_tokens=200)


@pytest.fixture()
def client(engine):
    from starlette.testclient import TestClient

    from harnessfit.serve.app import create_app

    with TestClient(create_app(engine), base_url=BASE, raise_server_exceptions=False) as c:
        yield c


def _assert_openai_error(r: httpx.Response, status: int, needle: str) -> dict:
    assert r.status_code == status, (r.status_code, r.text[:300])
    assert r.headers["content-type"].startswith("application/json"), r.headers["content-type"]
    err = r.json()["error"]
    assert needle in err["message"], err
    assert err["type"] == "invalid_request_error"
    return err


def test_plain_request_still_works(client) -> None:
    r = client.post("/v1/chat/completions", json=_body("hi"))
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == "Hello there"


def test_seed_beyond_int64_is_a_4xx(client) -> None:
    r = client.post("/v1/chat/completions", json=_body("hi", seed=2**70))
    _assert_openai_error(r, 400, "seed")


def test_deeply_nested_body_is_a_4xx(client) -> None:
    depth = 100_000
    raw = json.dumps(_body("hi"))[:-1] + ', "metadata": ' + "[" * depth + "]" * depth + "}"
    r = client.post("/v1/chat/completions", content=raw, headers={"content-type": "application/json"})
    _assert_openai_error(r, 400, "nested")


def test_oversized_body_is_refused(client) -> None:
    raw = json.dumps(_body("x" * (9 * 1024 * 1024)))
    r = client.post("/v1/chat/completions", content=raw, headers={"content-type": "application/json"})
    _assert_openai_error(r, 413, "bytes")


def test_huge_prompt_is_refused_before_tokenising(client, engine, monkeypatch) -> None:
    """A 5 MB prompt is refused from a bound on its size (no token of it is counted), long before the server
    would have tokenised all of it."""
    calls: list[int] = []
    real = type(engine.tokenizer).__call__

    def counting(self, text, *args, **kwargs):
        calls.append(len(text) if isinstance(text, str) else -1)
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(type(engine.tokenizer), "__call__", counting)
    r = client.post("/v1/chat/completions", json=_body("word " * 1_000_000))
    err = _assert_openai_error(r, 400, "at least")
    assert err["code"] == "context_length_exceeded"
    assert not any(n > 1_000_000 for n in calls), calls  # the 5 MB text was never tokenised


def test_body_must_be_json(client) -> None:
    r = client.post("/v1/chat/completions", content=json.dumps(_body("hi")), headers={"content-type": "text/plain"})
    _assert_openai_error(r, 415, "application/json")


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "evil.example.com"}, 403),
        ({"host": "127.0.0.1.evil.example.com:8000"}, 403),
        ({"origin": "http://evil.example.com"}, 403),
        ({"origin": "null"}, 403),
        ({"origin": "http://127.0.0.1:8000"}, 200),
        ({"host": "localhost:8000"}, 200),
    ],
)
def test_only_loopback_hosts_and_origins(client, headers, status) -> None:
    """A web page (DNS rebinding: a foreign Host; a cross-origin fetch: a foreign Origin) cannot drive the server."""
    r = client.post("/v1/chat/completions", json=_body("hi"), headers=headers)
    if status == 200:
        assert r.status_code == 200, r.text
    else:
        _assert_openai_error(r, status, "not allowed")
    if status != 200:
        _assert_openai_error(client.get("/v1/models", headers=headers), status, "not allowed")


def test_health_reports_a_stuck_engine(engine, client) -> None:
    """Item 5: while a generation makes no progress for longer than the stall limit, /health answers 503."""
    from harnessfit.serve.engine import GenerationResult
    from harnessfit.serve.protocol import parse_chat_request

    release = threading.Event()

    def stall(module, args):  # a model that hangs in its forward pass until released
        release.wait(timeout=30)

    handle = engine.model.register_forward_pre_hook(stall)
    old_stall = engine.stall_seconds
    engine.stall_seconds = 0.2
    ids = engine.render(parse_chat_request(json.dumps(_body("hi")).encode()))
    worker = threading.Thread(
        target=lambda: list(
            engine.generate(
                ids,
                max_new_tokens=3,
                temperature=None,
                top_p=None,
                seed=None,
                result=GenerationResult(prompt_tokens=len(ids)),
            )
        ),
        daemon=True,
    )
    try:
        worker.start()
        deadline = time.monotonic() + 10
        r = client.get("/health")
        while r.status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.1)
            r = client.get("/health")
        assert r.status_code == 503, r.text
        assert r.json()["status"] == "stuck"
    finally:
        handle.remove()
        release.set()
        worker.join(timeout=30)
        engine.stall_seconds = old_stall
    assert client.get("/health").json()["status"] == "ok"


def _ids(engine, user: str) -> list[int]:
    from harnessfit.serve.protocol import parse_chat_request

    return engine.render(parse_chat_request(json.dumps(_body(user)).encode()))


def test_abandoned_stream_does_not_block_the_engine(engine) -> None:
    """Item 5: a consumer that took one delta and stopped reading (what a disconnected client leaves behind, still
    referenced) must not keep the engine: the next generation runs to its end."""
    from harnessfit.serve.engine import GenerationResult

    ids = _ids(engine, "tell me a long story please")
    abandoned = engine.generate(
        ids,
        max_new_tokens=200,
        temperature=None,
        top_p=None,
        seed=None,
        result=GenerationResult(prompt_tokens=len(ids)),
    )
    assert next(abandoned).strip() == "token"
    got: list[str] = []
    hello = _ids(engine, "hi")
    second = threading.Thread(
        target=lambda: got.append(
            "".join(
                engine.generate(
                    hello,
                    max_new_tokens=10,
                    temperature=None,
                    top_p=None,
                    seed=None,
                    result=GenerationResult(prompt_tokens=len(hello)),
                )
            )
        ),
        daemon=True,
    )
    second.start()
    second.join(timeout=60)
    assert got == ["Hello there"], "the engine stayed locked by a consumer that stopped reading"
    abandoned.close()


def test_closing_a_stream_cancels_its_generation(engine) -> None:
    """Item 5: closing the iterator (the app does it when the client disconnects) stops the generation early."""
    from harnessfit.serve.engine import GenerationResult

    handle = engine.model.register_forward_pre_hook(lambda module, args: time.sleep(0.05))  # slow, not stuck
    before = engine.cancelled
    ids = _ids(engine, "tell me a long story please")
    result = GenerationResult(prompt_tokens=len(ids))
    try:
        it = engine.generate(ids, max_new_tokens=200, temperature=None, top_p=None, seed=None, result=result)
        next(it)
        it.close()
        deadline = time.monotonic() + 30
        while engine.cancelled == before and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        handle.remove()
    assert engine.cancelled == before + 1
    assert engine.health()["generating_seconds"] is None  # the engine is free again


def test_client_disconnect_mid_stream_does_not_wedge_the_server(model_dir) -> None:
    """Item 5 end to end: a client that reads one chunk of a stream and hangs up; the next requests are answered."""
    from harnessfit.serve import start_server

    with start_server(str(model_dir), model_id=MODEL_ID, max_tokens=200, backend="builtin") as handle:
        url = f"{handle.base_url}/chat/completions"
        for _ in range(2):
            with httpx.stream("POST", url, json=_body("tell me a long story please", stream=True), timeout=30) as r:
                assert r.status_code == 200
                next(r.iter_lines())
            # leaving the block closes the connection mid-stream
        r = httpx.post(url, json=_body("hi"), timeout=30)
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["message"]["content"] == "Hello there"
        health = httpx.get(handle.base_url.removesuffix("/v1") + "/health", timeout=10)
        assert health.status_code == 200 and health.json()["status"] == "ok"
