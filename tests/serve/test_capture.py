"""Token-exact capture: the turns the engine records are what it sampled — scoring the captured completion ids
under the same weights gives the captured logprobs, and the loss mask covers exactly the sampled tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.errors import UserError
from harnessfit.serve.capture import CaptureStore, episode_key, training_trace

BASE = "http://127.0.0.1"
# fp32 on CPU: generate() with a KV cache and one full forward pass over prompt + completion agree to about 1e-5;
# a wrong token, a wrong position or an unprocessed score differs by far more than this
TOLERANCE = 2e-3


def test_episode_key_is_the_bearer_key_as_a_file_name() -> None:
    assert episode_key("Bearer ep-7") == "ep-7"
    assert episode_key("bearer  a/b c") == "a_b_c"
    assert episode_key(None) == episode_key("") == "default"
    assert episode_key("../../etc/passwd") == ".._.._etc_passwd"


def test_store_numbers_turns_and_masks_only_sampled_tokens(tmp_path: Path) -> None:
    store = CaptureStore(tmp_path)
    for n in (2, 3):
        store.record(
            "ep",
            prompt_ids=[1, 2, 3],
            sampled_ids=list(range(n)),
            logprobs=[-0.5] * n,
            request={},
            response={},
            metadata={},
        )
    trace = training_trace(tmp_path, "ep")
    assert trace["schema_version"] == 1 and [t["node_id"] for t in trace["turns"]] == ["ep:0", "ep:1"]
    assert trace["turns"][1]["loss_mask"] == [0, 0, 0, 1, 1, 1]
    assert (
        CaptureStore(tmp_path).record(
            "ep", prompt_ids=[1], sampled_ids=[2], logprobs=[-1.0], request={}, response={}, metadata={}
        )["node_id"]
        == "ep:2"
    )  # a restart continues
    with pytest.raises(ValueError, match="logprobs"):
        store.record("ep", prompt_ids=[1], sampled_ids=[1, 2], logprobs=[0.0], request={}, response={}, metadata={})
    with pytest.raises(UserError, match="no captured turns"):
        training_trace(tmp_path, "other")


@pytest.mark.slow
def test_captured_logprobs_score_the_captured_ids(tmp_path: Path) -> None:
    import torch
    from starlette.testclient import TestClient

    from harnessfit.serve.app import create_app
    from harnessfit.serve.engine import load_engine

    engine = load_engine("smollm2-135m", max_tokens=12, model_id="m")
    with TestClient(create_app(engine, capture=CaptureStore(tmp_path)), base_url=BASE) as client:
        for key, extra in (("ep-greedy", {}), ("ep-hot", {"temperature": 2.0, "seed": 3, "stream": True})):
            body = {"model": "m", "messages": [{"role": "user", "content": "Name three colours."}], **extra}
            r = client.post("/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
            assert r.status_code == 200, r.text
        engine.default_temperature = 2.0  # `serve --temperature 2.0`: what a request naming none (Pi's) samples at
        body = {"model": "m", "messages": [{"role": "user", "content": "Name three colours."}], "seed": 4}
        r = client.post("/v1/chat/completions", json=body, headers={"Authorization": "Bearer ep-server"})
        assert r.status_code == 200, r.text

    assert training_trace(tmp_path, "ep-server")["turns"][0]["metadata"]["sampling"]["temperature"] == 2.0
    for key, temperature in (("ep-greedy", 1.0), ("ep-hot", 2.0), ("ep-server", 2.0)):
        (turn,) = training_trace(tmp_path, key)["turns"]
        prompt, sampled = turn["prompt_token_ids"], turn["completion_token_ids"]
        assert 0 < len(sampled) <= 12 and len(turn["per_token_logps"]) == len(sampled)
        assert turn["loss_mask"] == [0] * len(prompt) + [1] * len(sampled)
        with torch.inference_mode():
            logits = engine.model(torch.tensor([prompt + sampled])).logits[0].float()
        # the logits at position p choose token p + 1; sampling at temperature T drew from softmax(logits / T)
        rescored = torch.log_softmax(logits[len(prompt) - 1 : -1] / temperature, dim=-1)
        expected = [float(rescored[i, tok]) for i, tok in enumerate(sampled)]
        assert max(abs(a - b) for a, b in zip(expected, turn["per_token_logps"], strict=True)) < TOLERANCE
        text = engine.tokenizer.decode([t for t in sampled if t not in engine.stop_ids], skip_special_tokens=False)
        assert turn["response"]["text"] == text  # what the client got is what the ids say
        assert turn["metadata"]["finish_reason"] in ("stop", "length") and turn["metadata"]["complete"]
