"""The LLM judge against a scripted OpenAI-compatible endpoint (planned verdicts): valid, fenced, malformed,
out-of-range and refused verdicts, timeouts, endpoint errors with retries, and the concurrency bound. Unscorable
completions are None with the reason — never 0."""

from __future__ import annotations

import threading
import time

import pytest
from grpo_fixtures import card_tools

from harnessfit.harness.scripted import Reply, ScriptedEndpoint
from harnessfit.rewards import JudgeSettings
from harnessfit.rewards.judge import RUBRIC, JudgeClient, parse_verdict
from harnessfit.rewards.verifiable import parse_completion

REF = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"type": "function", "function": {"name": "read", "arguments": {"path": "a.txt"}}}],
}


def _samples(n: int):
    state = [{"role": "system", "content": "SYSTEM PROMPT"}, {"role": "user", "content": "What is in a.txt?"}]
    return [
        parse_completion(
            f'<tool_call>\n{{"name": "read", "arguments": {{"path": "a{i}.txt"}}}}\n</tool_call>',
            [],
            False,
            reference=REF,
            tools=card_tools(),
            state=state,
            dp_id=f"d{i}",
        )
        for i in range(n)
    ]


def _client(ep: ScriptedEndpoint, **kw) -> JudgeClient:
    return JudgeClient(JudgeSettings(base_url=ep.base_url, model="judge", api_key_env=None, **kw))


def test_parse_verdict_cases() -> None:
    assert parse_verdict('{"score": 7, "critique": "reads first"}').score == 0.7
    fenced = parse_verdict('Here:\n```json\n{"score": "9", "critique": "good"}\n```')
    assert fenced.score == 0.9 and fenced.critique == "good"
    assert parse_verdict("I cannot grade this.").reason == "no_verdict"
    assert parse_verdict('{"score": 15}').reason == "score_out_of_range"
    assert parse_verdict('{"score": "high"}').reason == "malformed_score"
    assert parse_verdict("").reason == "empty_reply"


def test_planned_verdicts_in_order_with_the_rubric_and_context() -> None:
    replies = [
        Reply(text='{"score": 8, "critique": "gathers evidence"}'),
        Reply(text="no idea"),
        Reply(text='```json\n{"score": 3, "critique": "speculates"}\n```'),
        Reply(text='{"score": 11}'),
    ]
    with ScriptedEndpoint(replies) as ep:
        verdicts = _client(ep, concurrency=1).score_many(_samples(4))
        sent = ep.requests
    assert [v.score for v in verdicts] == [0.8, None, 0.3, None]
    assert [v.reason for v in verdicts] == [None, "no_verdict", None, "score_out_of_range"]
    assert verdicts[0].critique == "gathers evidence"
    system, user = sent[0]["messages"]
    assert system["content"] == RUBRIC and "symptom patching" in RUBRIC.lower()
    assert "SYSTEM PROMPT" not in user["content"]  # the harness prompt is summarised as the tool list
    assert "What is in a.txt?" in user["content"] and "a0.txt" in user["content"] and "read" in user["content"]
    assert sent[0]["temperature"] == 0.0 and sent[0]["model"] == "judge"


def test_timeout_and_endpoint_errors_are_unscorable_after_retries() -> None:
    def slow(body, index):
        time.sleep(2.0)
        return Reply(text='{"score": 5}')

    with ScriptedEndpoint(slow) as ep:
        t0 = time.monotonic()
        (v,) = _client(ep, timeout_s=0.3, retries=1).score_many(_samples(1))
        assert v.score is None and v.reason == "timeout"
        assert len(ep.requests) == 2 and time.monotonic() - t0 < 1.9  # two tries, each cut at 0.3 s
    with ScriptedEndpoint([Reply(error="overloaded", status=503), Reply(text='{"score": 6}')]) as ep:
        (v,) = _client(ep, retries=1).score_many(_samples(1))
        assert v.score == 0.6  # the retry after the 5xx got a verdict
    with ScriptedEndpoint([Reply(error="boom", status=500)] * 2) as ep:
        (v,) = _client(ep, retries=1).score_many(_samples(1))
        assert v.score is None and v.reason == "endpoint_error: HTTP 500"
    with ScriptedEndpoint([Reply(error="bad request", status=400)]) as ep:
        (v,) = _client(ep, retries=3).score_many(_samples(1))
        assert v.reason == "endpoint_error: HTTP 400" and len(ep.requests) == 1  # a 4xx is not retried
    dead = JudgeClient(JudgeSettings(base_url="http://127.0.0.1:9/v1", model="j", api_key_env=None, retries=0))
    assert dead.score_many(_samples(1))[0].reason.startswith("endpoint_error: ")


def test_concurrency_is_bounded_and_order_is_kept() -> None:
    lock = threading.Lock()
    live, peak = [0], [0]

    def respond(body, index):
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        time.sleep(0.2)
        with lock:
            live[0] -= 1
        path = body["messages"][1]["content"].split("## The agent's next turn")[1]
        return Reply(text=f'{{"score": {path.count("a5.txt") * 9 + 1}}}')

    with ScriptedEndpoint(respond) as ep:
        verdicts = _client(ep, concurrency=3).score_many(_samples(8))
    assert peak[0] == 3
    assert [v.score for v in verdicts] == [0.1] * 5 + [1.0] + [0.1] * 2


def test_unscorable_completion_is_none_in_the_combined_reward(tmp_path) -> None:
    import json

    from harnessfit.harness.card import load_card
    from harnessfit.models import load_tokenizer
    from harnessfit.rewards.reward_set import RewardSet

    tok = load_tokenizer("smollm2-135m")
    eot = tok.convert_tokens_to_ids("<|im_end|>")
    with ScriptedEndpoint([Reply(text='{"score": 10, "critique": "ideal"}'), Reply(text="refuse")]) as ep:
        rs = RewardSet(
            {"format": 1.0, "judge": 1.0},
            tokenizer=tok,
            stop_ids=[eot],
            card=load_card(),
            judge=JudgeSettings(base_url=ep.base_url, model="j", api_key_env=None, concurrency=1),
            log_path=tmp_path / "c.jsonl",
            num_generations=2,
        )
        ids = tok(
            '<tool_call>\n{"name": "read", "arguments": {"path": "a.txt"}}\n</tool_call>', add_special_tokens=False
        )["input_ids"] + [eot]
        metrics = {}
        out = rs(
            prompts=["p"] * 2,
            completions=[""] * 2,
            completion_ids=[ids, ids],
            dp_id=["d", "d"],
            tools=[json.dumps(card_tools())] * 2,
            reference=[json.dumps(REF)] * 2,
            log_metric=lambda k, v: metrics.__setitem__(k, v),
        )
    assert out == [pytest.approx(1.0), None]
    rows = [json.loads(x) for x in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert rows[0]["critique"] == "ideal" and rows[1]["judge_reason"] == "no_verdict" and rows[1]["reward"] is None
    assert metrics["rewards/unscorable_frac"] == 0.5 and metrics["rewards/judge/mean"] == 1.0
