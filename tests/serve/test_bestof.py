"""Best-of-n with the harness card as verifier (``serve.bestof``): the first candidate whose calls pass is
returned, else the best-scoring one; candidates after the first are sampled; the layer serves through the real
OpenAI app. A scripted engine plays planned candidate texts (known behaviour is the point); prompts are rendered
by the real tokenizer and template."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from harnessfit.serve.bestof import BestOfEngine, CardVerifier, summarise_log
from harnessfit.serve.engine import Engine, GenerationResult

READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}
GOOD = '<tool_call>\n{"name": "read", "arguments": {"path": "a.txt"}}\n</tool_call>'
DOUBLE = '<tool_call>\n{"name": "read", "arguments": "{\\"path\\": \\"a.txt\\"}"}\n</tool_call>'
BROKEN = '<tool_call>\n{"name": "read", "arguments": {"path": \n</tool_call>'
WRONG_TOOL = '<tool_call>\n{"name": "write", "arguments": {"path": "a.txt", "content": "x"}}\n</tool_call>'


class PlannedEngine(Engine):
    """An Engine whose generate() plays planned (text, finish_reason) candidates and records how it was asked."""

    def __init__(self, tokenizer, plan: list[tuple[str, str]]) -> None:
        model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=8192))
        super().__init__(model, tokenizer, stop_ids=[tokenizer.eos_token_id], max_tokens=64, model_id="planned")
        self.plan = list(plan)
        self.calls: list[dict] = []

    def generate(self, prompt_ids, *, max_new_tokens, temperature, top_p, seed, result, cancel=None, request=None):
        if cancel is not None and cancel.is_set():
            return  # as the real engine: a cancelled request generates nothing more
        text, finish = self.plan[len(self.calls) % len(self.plan)]
        self.calls.append({"temperature": temperature, "seed": seed})
        result.text, result.finish_reason, result.completion_tokens = text, finish, 7
        try:
            yield text
        finally:
            if cancel is not None:
                cancel.set()  # as Engine.generate does once its iterator is done


@pytest.fixture(scope="module")
def tokenizer():
    from harnessfit.models import load_tokenizer

    return load_tokenizer("smollm2-135m")


def _request(tools=True):
    from harnessfit.serve.protocol import parse_chat_request

    body = {"model": "planned", "messages": [{"role": "user", "content": "read a.txt"}]}
    if tools:
        body["tools"] = [READ_TOOL]
    return parse_chat_request(json.dumps(body).encode())


def _run(engine: BestOfEngine, request) -> tuple[str, GenerationResult]:
    result = GenerationResult(prompt_tokens=3)
    text = "".join(
        engine.generate(
            [1, 2, 3], max_new_tokens=64, temperature=None, top_p=None, seed=None, result=result, request=request
        )
    )
    return text, result


def test_first_passing_candidate_is_returned_and_the_rest_are_sampled(tokenizer, tmp_path) -> None:
    planned = PlannedEngine(tokenizer, [(DOUBLE, "stop"), (BROKEN, "stop"), (GOOD, "stop"), (DOUBLE, "stop")])
    engine = BestOfEngine(planned, 4, CardVerifier(), temperature=0.8, log_path=tmp_path / "b.jsonl")
    text, result = _run(engine, _request())
    assert text == GOOD and result.text == GOOD and result.finish_reason == "stop"
    assert len(planned.calls) == 3  # stopped at the first that passes
    assert planned.calls[0] == {"temperature": None, "seed": None}  # as the request asked: greedy
    assert [c["temperature"] for c in planned.calls[1:]] == [0.8, 0.8] and planned.calls[1]["seed"] != planned.calls[2][
        "seed"
    ]
    assert engine.stats() == {
        "n": 4,
        "requests": 1,
        "valid_first_sample": 0.0,
        "valid_best_of_n": 1.0,
        "candidates_per_request": 3.0,
    }
    row = json.loads((tmp_path / "b.jsonl").read_text())
    assert row["chosen"] == 2 and row["first_passes"] is False and row["any_passes"] is True
    summary = summarise_log(tmp_path / "b.jsonl")
    assert summary["valid_best_of_n"] == 1.0 and summary["valid_first_sample"] == 0.0
    assert summary["tool_call_first_sample"] == 0.0 and summary["tool_call_best_of_n"] == 1.0


def test_a_text_reply_passes_but_is_no_tool_call(tokenizer, tmp_path) -> None:
    planned = PlannedEngine(tokenizer, [("The file says hello.", "stop"), (GOOD, "stop")])
    engine = BestOfEngine(planned, 2, CardVerifier(), log_path=tmp_path / "b.jsonl")
    text, _ = _run(engine, _request())
    assert text == "The file says hello." and len(planned.calls) == 1  # nothing to fail: the first reply stands
    summary = summarise_log(tmp_path / "b.jsonl")
    assert summary["valid_first_sample"] == summary["valid_best_of_n"] == 1.0
    assert summary["tool_call_first_sample"] == summary["tool_call_best_of_n"] == 0.0


def test_without_a_passing_candidate_the_best_scoring_one_is_returned(tokenizer) -> None:
    planned = PlannedEngine(tokenizer, [(BROKEN, "stop"), (WRONG_TOOL, "stop"), (GOOD + " and more", "length")])
    engine = BestOfEngine(planned, 3, CardVerifier())
    text, _result = _run(engine, _request())
    # broken block: format fails; cut off: clean_end fails; write is not an active tool: tool_active and schema fail
    scores = {t: CardVerifier().check(t, truncated=f == "length", active_tools=["read"]) for t, f in planned.plan}
    best = max(planned.plan, key=lambda p: scores[p[0]].score)
    assert not any(s.passes for s in scores.values()) and text == best[0] == GOOD + " and more"
    assert engine.stats()["valid_best_of_n"] == 0.0 and len(planned.calls) == 3


def test_a_text_reply_passes_and_inactive_tools_fail(tokenizer) -> None:
    planned = PlannedEngine(tokenizer, [("It says hello.", "stop")])
    text, _ = _run(BestOfEngine(planned, 3, CardVerifier()), _request())
    assert text == "It says hello." and len(planned.calls) == 1
    v = CardVerifier()
    assert v.check(GOOD, truncated=False, active_tools=["read"]).passes
    assert not v.check(GOOD, truncated=False, active_tools=["bash"]).passes  # read is not offered here
    assert not v.check(DOUBLE, truncated=False, active_tools=["read"]).passes


def test_best_of_serves_through_the_openai_app(tokenizer) -> None:
    from starlette.testclient import TestClient

    from harnessfit.serve.app import create_app

    planned = PlannedEngine(tokenizer, [(DOUBLE, "stop"), (GOOD, "stop")])
    client = TestClient(
        create_app(BestOfEngine(planned, 2, CardVerifier())), base_url="http://127.0.0.1"
    )  # loopback Host
    body = {"model": "planned", "messages": [{"role": "user", "content": "read a.txt"}], "tools": [READ_TOOL]}
    reply = client.post("/v1/chat/completions", json=body).json()
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"path": "a.txt"}'}
    assert reply["usage"]["completion_tokens"] == 7
    with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as resp:
        chunks = [json.loads(line[6:]) for line in resp.iter_lines() if line.startswith("data: {")]
    calls = [
        d["choices"][0]["delta"]["tool_calls"]
        for d in chunks
        if d["choices"] and d["choices"][0]["delta"].get("tool_calls")
    ]
    assert calls[0][0]["function"]["arguments"] == '{"path": "a.txt"}'
    assert len(planned.calls) == 4  # two candidates per request


def test_a_client_that_hung_up_gets_no_more_candidates(tokenizer) -> None:
    import threading

    planned = PlannedEngine(tokenizer, [(BROKEN, "stop")])
    engine = BestOfEngine(planned, 3, CardVerifier())
    cancel = threading.Event()
    result = GenerationResult(prompt_tokens=3)
    gen = engine.generate(
        [1, 2, 3],
        max_new_tokens=8,
        temperature=None,
        top_p=None,
        seed=None,
        result=result,
        cancel=cancel,
        request=_request(),
    )
    cancel.set()
    assert list(gen) == [] and planned.calls == [] and engine.stats()["requests"] == 0
    planned_ok = PlannedEngine(tokenizer, [(BROKEN, "stop")])
    _run(BestOfEngine(planned_ok, 3, CardVerifier()), _request())
    assert len(planned_ok.calls) == 3  # the engine setting its own event after each candidate stops nothing
