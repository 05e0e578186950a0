"""The start-up probe (``serve.probe_endpoint``) and vLLM's token API on the built-in engine (``serve.token_api``).

The grading is checked against scripted endpoints whose answers are known (one lacking ids, one returning raw
logprobs, one that never calls a tool); the real engine (embedded SmolLM2) must pass the fatal checks, with its
top-2 gap halving from T=1 to T=2, and its token fields must agree with OpenEnv's own grader when it is installed.
"""

from __future__ import annotations

import json

import httpx
import pytest

from harnessfit.errors import UserError
from harnessfit.serve.probe_endpoint import probe_endpoint, require_training_endpoint

BASE = "http://127.0.0.1"


def _scripted(*, ids: bool = True, processed: bool = True, tool_call: bool = True) -> httpx.Client:
    """An endpoint whose first-token logits are fixed (3, 1, 0): processed logprobs divide them by T, raw ones not."""

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        t = body.get("temperature") or 1.0
        scale = t if processed else 1.0
        logits = [3.0 / scale, 1.0 / scale, 0.0]
        norm = max(logits) + __import__("math").log(sum(__import__("math").exp(x - max(logits)) for x in logits))
        lps = [x - norm for x in logits]
        top = [{"token": f"token_id:{i}", "logprob": lp} for i, lp in enumerate(lps)]
        choice = {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "ok"},
            "logprobs": {"content": [{"token": "token_id:0", "logprob": lps[0], "top_logprobs": top}]},
        }
        payload = {"choices": [choice]}
        if ids:
            payload["prompt_token_ids"] = [5, 6, 7]
            choice["token_ids"] = [0]
        if body.get("tools") and tool_call:
            choice["message"]["tool_calls"] = [
                {"id": "c", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
            ]
        return httpx.Response(200, json=payload)

    return httpx.Client(transport=httpx.MockTransport(answer))


def test_a_capable_endpoint_passes_every_check() -> None:
    report = probe_endpoint(f"{BASE}/v1", "m", client=_scripted())
    assert report.ok and report.problem is None and report.warnings == []
    assert [c.name for c in report.checks] == ["token_ids", "processed_logprobs", "tool_call"]


def test_missing_token_ids_is_one_line_naming_the_vllm_flags() -> None:
    report = probe_endpoint(f"{BASE}/v1", "m", client=_scripted(ids=False))
    assert not report.ok and "\n" not in report.problem
    assert "prompt_token_ids" in report.problem and "--return-tokens-as-token-ids" in report.problem
    with pytest.raises(UserError, match="--logprobs-mode processed_logprobs"):
        require_training_endpoint(f"{BASE}/v1", "m", client=_scripted(ids=False))


def test_raw_logprobs_are_caught_by_the_temperature_gap() -> None:
    report = probe_endpoint(f"{BASE}/v1", "m", client=_scripted(processed=False))
    assert not report.ok and "raw (pre-temperature) logprobs" in report.problem
    assert "ratio 1.00" in report.problem and "--logprobs-mode processed_logprobs" in report.problem


def test_no_tool_call_is_a_warning_not_a_failure() -> None:
    report = probe_endpoint(f"{BASE}/v1", "m", client=_scripted(tool_call=False))
    assert report.ok and len(report.warnings) == 1 and "tool_call" in report.warnings[0]


def test_an_unreachable_endpoint_fails_the_first_check() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    report = probe_endpoint(f"{BASE}/v1", "m", client=httpx.Client(transport=httpx.MockTransport(refuse)))
    assert not report.ok and "connection refused" in report.problem and len(report.checks) == 1


def test_streamed_token_api_requests_are_refused() -> None:
    from harnessfit.serve.protocol import ApiError, parse_chat_request

    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, "logprobs": True}
    with pytest.raises(ApiError, match="non-streaming"):
        parse_chat_request(json.dumps(body).encode())


@pytest.mark.slow
def test_the_builtin_engine_passes_the_probe_and_speaks_vllms_token_api() -> None:
    from starlette.testclient import TestClient

    from harnessfit.serve.app import create_app
    from harnessfit.serve.engine import load_engine

    engine = load_engine("smollm2-135m", max_tokens=24, model_id="m")
    with TestClient(create_app(engine), base_url=BASE) as client:
        report = probe_endpoint(f"{BASE}/v1", "m", client=client, tool_max_tokens=24)
        body = {
            "model": "m",
            "messages": [{"role": "user", "content": "Say hi."}],
            "max_tokens": 6,
            "temperature": 0.7,
            "seed": 1,
            "logprobs": True,
            "top_logprobs": 2,
            "return_token_ids": True,
        }
        payload = client.post("/v1/chat/completions", json=body).json()
    assert report.ok, report.problem
    assert report.checks[1].ok, report.checks[1].detail
    ratio = float(report.checks[1].detail.rsplit("ratio ", 1)[1].rstrip(")"))
    assert abs(ratio - 0.5) < 0.01  # processed: log_softmax(logits / T), the gap is (a - b) / T
    choice = payload["choices"][0]
    ids, content = choice["token_ids"], choice["logprobs"]["content"]
    assert payload["prompt_token_ids"] and 0 < len(ids) <= 6 and len(content) == len(ids)
    assert [e["token"] for e in content] == [f"token_id:{i}" for i in ids]
    for entry in content:  # the sampled token's logprob is one of its distribution's; the top ones come first
        tops = [t["logprob"] for t in entry["top_logprobs"]]
        assert len(tops) == 2 and tops[0] >= tops[1] and entry["logprob"] <= tops[0] + 1e-6
    openenv = pytest.importorskip("openenv.core.harness.capture.validate")
    assert openenv.check_upstream_response(payload).ok  # the ecosystem's grader accepts the engine's answer
