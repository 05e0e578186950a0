"""The built-in backend end to end: a real server subprocess (``start_server``) over a tiny scripted GPT-2 (see
conftest), spoken to over HTTP like Pi does."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from harnessfit.serve import start_server, write_harness_config

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("serve-builtin")]

READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        "strict": False,
    },
}
SYSTEM = {"role": "system", "content": "You are a coding agent."}
MODEL_ID = "scripted"
CALL_TEXT = '<tool_call>\n{"name": "read", "arguments": {"path":  "a.txt"}}\n</tool_call>'
DOUBLE_TEXT = '<tool_call>\n{"name": "read", "arguments": "{\\"path\\": \\"a.txt\\"}"}\n</tool_call>'


def _body(user: str, *, tools: bool = False, **extra) -> dict:
    body = {"model": MODEL_ID, "messages": [SYSTEM, {"role": "user", "content": [{"type": "text", "text": user}]}]}
    if tools:
        body["tools"] = [READ_TOOL]
    body.update(extra)
    return body


PROMPTS = {
    "hello": _body("hi"),
    "stop": _body("please say hi to everyone in this room today, thanks a lot"),
    "call": _body("read a.txt", tools=True),
    "double": _body(
        "read the file named a.txt for me now please, then tell me everything that it says, line by line, "
        "with a short note on each line and a summary at the end of what the whole file is for",
        tools=True,
    ),
}


@pytest.fixture(scope="module")
def server(scripted_factory):
    f = scripted_factory
    im_end = f.token_id("<|im_end|>")
    bang = f.encode("!")
    assert len(bang) == 1
    texts = {"hello": "Hello there", "stop": "Hi", "call": "Sure." + "\n" + CALL_TEXT, "double": DOUBLE_TEXT}
    scripts = []
    for key, text in texts.items():
        ids = f.encode(text)
        # "stop": the second generation_config stop id, then text that must never be served
        ids = ids + bang + f.encode(" world") + [im_end] if key == "stop" else ids + [im_end]
        scripts.append((f.prompt_len(PROMPTS[key]), ids))
    model_dir = f.build("scripted", scripts, eos_ids=[im_end, bang[0]])
    with start_server(str(model_dir), model_id=MODEL_ID, max_tokens=48, backend="builtin") as handle:
        yield handle


def _post(server, body: dict) -> httpx.Response:
    return httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=60)


def _stream(server, body: dict) -> list[dict]:
    chunks = []
    with httpx.stream("POST", f"{server.base_url}/chat/completions", json={**body, "stream": True}, timeout=60) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    for line in lines[:-1]:
        assert line.startswith("data: ")
        chunks.append(json.loads(line[6:]))
    return chunks


def test_models_lists_the_served_id(server) -> None:
    r = httpx.get(f"{server.base_url}/models", timeout=10)
    assert r.status_code == 200
    assert [m["id"] for m in r.json()["data"]] == [MODEL_ID]
    assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")


def test_non_streaming_reply(server) -> None:
    r = _post(server, PROMPTS["hello"])
    assert r.status_code == 200, r.text
    data = r.json()
    choice = data["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "Hello there"}
    assert choice["finish_reason"] == "stop"
    assert data["usage"]["completion_tokens"] == 3  # "Hello", " there", <|im_end|>


def test_streaming_reply_with_usage(server) -> None:
    chunks = _stream(server, {**PROMPTS["hello"], "stream_options": {"include_usage": True}})
    deltas = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
    assert "".join(d for d in deltas if d) == "Hello there"
    assert len([d for d in deltas if d]) >= 2  # sent as generated, not in one piece
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[-1] == "stop" and all(f is None for f in finishes[:-1])
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 3


def test_second_stop_id_from_generation_config_ends_the_reply(server) -> None:
    data = _post(server, PROMPTS["stop"]).json()
    assert data["choices"][0]["message"]["content"] == "Hi"
    assert data["choices"][0]["finish_reason"] == "stop"


def test_request_cap_gives_length(server) -> None:
    for field in ("max_tokens", "max_completion_tokens"):
        data = _post(server, {**PROMPTS["hello"], field: 1}).json()
        assert data["choices"][0]["message"]["content"] == "Hello"
        assert data["choices"][0]["finish_reason"] == "length"
        assert data["usage"]["completion_tokens"] == 1


def test_tool_call_parsed_non_streaming(server) -> None:
    data = _post(server, PROMPTS["call"]).json()
    msg = data["choices"][0]["message"]
    assert data["choices"][0]["finish_reason"] == "tool_calls"
    assert msg["content"] == "Sure."
    (call,) = msg["tool_calls"]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"] == {"name": "read", "arguments": '{"path":  "a.txt"}'}  # spacing as written


def test_double_encoded_arguments_stay_visible_streaming(server) -> None:
    chunks = _stream(server, PROMPTS["double"])
    calls = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    assert len(calls) == 1
    args = calls[0]["function"]["arguments"]
    assert args == '"{\\"path\\": \\"a.txt\\"}"'
    assert isinstance(json.loads(args), str)
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert "<tool_call>" not in content
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_history_with_tool_result_is_accepted(server) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path":"a.txt"}'}}
    body = _body("read a.txt", tools=True, max_tokens=2)
    body["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "hello", "tool_call_id": "call_1"},
    ]
    r = _post(server, body)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (json.dumps({"model": MODEL_ID}).encode(), 400, "messages"),
        (json.dumps({"model": MODEL_ID, "messages": []}).encode(), 400, "messages"),
        (json.dumps({"model": MODEL_ID, "messages": [{"role": "wizard", "content": "x"}]}).encode(), 400, "role"),
        (json.dumps({"model": MODEL_ID, "messages": [{"role": "tool", "content": "x"}]}).encode(), 400, "tool_call_id"),
        (
            json.dumps({"model": MODEL_ID, "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]}).encode(),
            400,
            "max_tokens",
        ),
        (
            json.dumps(
                {
                    "model": MODEL_ID,
                    "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
                }
            ).encode(),
            400,
            "only text parts",
        ),
        (json.dumps({"model": "other", "messages": [{"role": "user", "content": "x"}]}).encode(), 404, "not served"),
    ],
)
def test_malformed_requests_get_a_clear_4xx(server, body: bytes, status: int, needle: str) -> None:
    r = httpx.post(
        f"{server.base_url}/chat/completions", content=body, headers={"content-type": "application/json"}, timeout=30
    )
    assert r.status_code == status
    message = r.json()["error"]["message"]
    assert needle in message


def test_prompt_over_the_context_is_refused(server) -> None:
    r = _post(server, _body("word " * 500))
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "context_length_exceeded"


def test_write_harness_config_points_at_the_server(server, tmp_path: Path) -> None:
    agent = write_harness_config(tmp_path / "agent", server)
    models = json.loads((agent / "models.json").read_text())
    provider = models["providers"]["local"]
    assert provider["baseUrl"] == server.base_url
    assert provider["models"][0]["id"] == MODEL_ID
    assert provider["models"][0]["maxTokens"] == 48
    assert provider["models"][0]["contextWindow"] == 384
    assert json.loads((agent / "settings.json").read_text())["retry"]["enabled"] is False
