"""The endpoint server's checks are options of a backend, not forks of the server: the scripted backend, given the
built-in engine's options, refuses what the engine refuses — in its own error shape."""

from __future__ import annotations

from dataclasses import replace

from fastapi.testclient import TestClient

from harnessfit.endpoint import create_endpoint_app
from harnessfit.harness.scripted import SCRIPTED_OPTIONS, Reply, ScriptedBackend


def _client(**options: object) -> tuple[TestClient, ScriptedBackend]:
    backend = ScriptedBackend([Reply(text="ok")] * 4, "m")
    backend.options = replace(SCRIPTED_OPTIONS, **options)  # type: ignore[misc]
    return TestClient(create_endpoint_app(backend), base_url="http://127.0.0.1"), backend


def test_loopback_content_type_and_body_limit_are_options() -> None:
    strict, backend = _client(loopback_only=True, json_only=True, max_body_bytes=64)
    with strict:
        web = strict.post("/v1/chat/completions", json={"messages": []}, headers={"host": "evil.example"})
        plain = strict.post("/v1/chat/completions", content=b'{"messages": []}', headers={"content-type": "text/plain"})
        big = strict.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x" * 100}]})
        fine = strict.post("/v1/chat/completions", json={"messages": []})
    assert web.status_code == 403 and web.json()["error"] == {
        "message": web.json()["error"]["message"],
        "type": "server_error",
        "code": 403,
    }
    assert "evil.example" in web.json()["error"]["message"]
    assert plain.status_code == 415 and "application/json" in plain.json()["error"]["message"]
    assert big.status_code == 413 and "64 bytes" in big.json()["error"]["message"]
    assert fine.status_code == 200 and fine.json()["choices"][0]["message"]["content"] == "ok"
    assert len(backend.requests) == 1  # refused requests never reached the script

    lax, backend = _client()
    with lax:
        assert (
            lax.post(
                "/v1/chat/completions",
                content=b'{"messages": []}',
                headers={"host": "evil.example", "content-type": "text/plain"},
            ).status_code
            == 200
        )
    assert backend.requests == [{"messages": []}]


def test_admission_is_an_option() -> None:
    client, _ = _client(max_queue=1)
    app = client.app
    admission = app.state.admission  # type: ignore[attr-defined]
    since = admission.enter()  # one request already in the server: the next is refused
    with client:
        busy = client.post("/v1/chat/completions", json={"messages": []})
    admission.leave(since)
    assert busy.status_code == 429 and busy.headers["retry-after"].isdigit()
    assert busy.json()["error"]["code"] == 429
