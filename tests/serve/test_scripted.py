"""The scripted endpoint speaks OpenAI chat completions: plain JSON, SSE streams, tool-call deltas, errors."""

from __future__ import annotations

import json

import httpx
import pytest

from harnessfit.harness.scripted import Reply, ScriptedEndpoint


def _sse(ep: ScriptedEndpoint, body: dict) -> tuple[list[dict], bool]:
    """POST a streaming request; return the parsed chunks and whether [DONE] came."""
    chunks, done = [], False
    with httpx.stream("POST", f"{ep.base_url}/chat/completions", json=body, timeout=10) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        for line in resp.iter_lines():
            if not line.startswith("data: "):
                continue
            data = line[len("data: ") :]
            if data == "[DONE]":
                done = True
            else:
                chunks.append(json.loads(data))
    return chunks, done


def test_models_and_plain_json_reply_are_logged() -> None:
    script = [Reply(text="Hello there."), Reply(tool_calls=[("read", '{"path":"a.txt"}')], reasoning="hmm")]
    with ScriptedEndpoint(script, model_id="m-x") as ep:
        assert ep.base_url.startswith("http://127.0.0.1:") and ep.base_url.endswith("/v1")
        models = httpx.get(f"{ep.base_url}/models", timeout=10).json()
        assert [m["id"] for m in models["data"]] == ["m-x"]
        r1 = httpx.post(
            f"{ep.base_url}/chat/completions",
            json={"model": "m-x", "messages": [{"role": "user", "content": "hi"}]},
            timeout=10,
        ).json()
        r2 = httpx.post(
            f"{ep.base_url}/chat/completions", json={"model": "m-x", "messages": [], "n": 1}, timeout=10
        ).json()
        assert [q.get("n") for q in ep.requests] == [None, 1]
        assert ep.requests[0]["messages"] == [{"role": "user", "content": "hi"}]
    assert r1["choices"][0]["message"] == {"role": "assistant", "content": "Hello there."}
    assert r1["choices"][0]["finish_reason"] == "stop"
    msg = r2["choices"][0]["message"]
    assert r2["choices"][0]["finish_reason"] == "tool_calls"
    assert msg["content"] is None and msg["reasoning_content"] == "hmm"
    assert msg["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"path":"a.txt"}'}
    assert r2["usage"]["total_tokens"] == r2["usage"]["prompt_tokens"] + r2["usage"]["completion_tokens"]


def test_stream_carries_text_reasoning_tool_calls_verbatim_and_usage() -> None:
    broken = (
        '{"path": "x.txt", "note": "a long argument text that is split over several deltas"'  # truncated on purpose
    )
    script = [
        Reply(text="Let me check the file for you.", reasoning="think", tool_calls=[("read", broken), ("bash", "{}")])
    ]
    with ScriptedEndpoint(script) as ep:
        chunks, done = _sse(
            ep, {"model": "scripted", "messages": [], "stream": True, "stream_options": {"include_usage": True}}
        )
    assert done
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[0]["role"] == "assistant"
    assert "".join(d.get("content") or "" for d in deltas) == "Let me check the file for you."
    assert "".join(d.get("reasoning_content") or "" for d in deltas) == "think"
    args: dict[int, str] = {}
    names: dict[int, str] = {}
    for d in deltas:
        for tc in d.get("tool_calls") or []:
            args[tc["index"]] = args.get(tc["index"], "") + tc["function"].get("arguments", "")
            if "name" in tc["function"]:
                names[tc["index"]] = tc["function"]["name"]
    assert names == {0: "read", 1: "bash"}
    assert args == {0: broken, 1: "{}"}
    assert sum(1 for d in deltas for tc in d.get("tool_calls") or [] if tc["index"] == 0) > 2  # really streamed
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert finishes == ["tool_calls"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0


def test_no_usage_chunk_without_include_usage_and_custom_finish() -> None:
    with ScriptedEndpoint([Reply(text="cut", finish_reason="length")]) as ep:
        chunks, done = _sse(ep, {"messages": [], "stream": True})
    assert done and all(c["choices"] for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_script_running_out_and_planned_errors_are_http_errors() -> None:
    with ScriptedEndpoint([Reply(error="overloaded", status=503), Reply(text="ok")]) as ep:
        r1 = httpx.post(f"{ep.base_url}/chat/completions", json={"messages": []}, timeout=10)
        r2 = httpx.post(f"{ep.base_url}/chat/completions", json={"messages": []}, timeout=10)
        r3 = httpx.post(f"{ep.base_url}/chat/completions", json={"messages": [], "stream": True}, timeout=10)
        assert len(ep.requests) == 3
    assert r1.status_code == 503 and r1.json()["error"]["message"] == "overloaded"
    assert r2.status_code == 200
    assert r3.status_code == 500
    assert "ran out of replies" in r3.json()["error"]["message"] and "request 3" in r3.json()["error"]["message"]


def test_callable_responder_sees_body_and_index_and_its_failure_is_reported() -> None:
    def respond(body: dict, index: int) -> Reply:
        if index == 1:
            raise RuntimeError("boom")
        return Reply(text=f"#{index} saw {len(body['messages'])} messages")

    with ScriptedEndpoint(respond) as ep:
        ok = httpx.post(f"{ep.base_url}/chat/completions", json={"messages": [{}, {}]}, timeout=10).json()
        bad = httpx.post(f"{ep.base_url}/chat/completions", json={"messages": []}, timeout=10)
    assert ok["choices"][0]["message"]["content"] == "#0 saw 2 messages"
    assert bad.status_code == 500 and "boom" in bad.json()["error"]["message"]


def test_endless_reply_streams_until_the_client_leaves() -> None:
    ep = ScriptedEndpoint([Reply(text="start ", endless=True)]).start()
    try:
        got = ""
        with httpx.stream(
            "POST", f"{ep.base_url}/chat/completions", json={"messages": [], "stream": True}, timeout=10
        ) as resp:
            for line in resp.iter_lines():
                if line.startswith("data: {"):
                    choice = json.loads(line[6:])["choices"][0]
                    assert choice["finish_reason"] is None
                    got += choice["delta"].get("content") or ""
                if len(got) > 2000:
                    break
        assert got.startswith("start and on and on")
    finally:
        ep.stop()
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{ep.base_url}/models", timeout=2)


def test_unknown_route_and_bad_body() -> None:
    with ScriptedEndpoint([]) as ep:
        assert httpx.get(f"{ep.base_url}/nothing", timeout=10).status_code == 404
        assert httpx.post(f"{ep.base_url}/chat/completions", content=b"{oops", timeout=10).status_code == 400
        assert ep.requests == []
