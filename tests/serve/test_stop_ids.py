"""Serving stops on every id the audit's masks taught as end-of-turn (recorded in tokenized/meta.json and the
adapter metadata), not only on the model's own generation_config eos list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessfit.core import jsonio
from harnessfit.serve.engine import GenerationResult, load_engine
from harnessfit.serve.protocol import parse_chat_request
from harnessfit.serve.sources import collect_stop_ids, recorded_stop_ids, resolve_source
from harnessfit.tokens import audit

pytestmark = pytest.mark.xdist_group("serve-builtin")

BODY = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": [{"type": "text", "text": "say hi"}]},
    ],
}


def _audit_dir(tmp_path: Path) -> Path:
    rec = {
        "id": "r1",
        "conversation_id": "c",
        "split": "train",
        "action_index": 0,
        "messages": BODY["messages"],
        "tools": [],
        "action": {"role": "assistant", "content": "Hi"},
        "source": "pi",
        "group": "g",
    }
    (tmp_path / "ds" / "sft").mkdir(parents=True)
    jsonio.write_jsonl(tmp_path / "ds" / "sft" / "train.jsonl", [rec])
    audit(tmp_path / "ds", "embedded", tmp_path / "ds-audit", progress=False)
    return tmp_path / "ds-audit"


@pytest.mark.slow
def test_recorded_end_of_turn_ids_stop_generation(scripted_factory, tmp_path: Path) -> None:
    f = scripted_factory
    im_end, bang = f.token_id("<|im_end|>"), f.encode("!")
    assert len(bang) == 1
    out = _audit_dir(tmp_path)
    meta_path = out / "tokenized" / "meta.json"
    meta = json.loads(meta_path.read_bytes())
    assert im_end in meta["stop_token_ids"]  # the audit records the ids its masks ended on
    # plant a template whose turns end on "!" (as if the masks had taught it): serving must stop there too
    meta["stop_token_ids"] = meta["stop_token_ids"] + bang
    meta_path.write_bytes(json.dumps(meta).encode())

    prompt_len = f.prompt_len(BODY)
    model = f.build(
        "eot-model", [(prompt_len, f.encode("Hi") + bang + f.encode(" world") + [im_end])], eos_ids=[im_end]
    )
    source = resolve_source(str(model), tokenizer=out)
    assert source.tokenizer_dir == out / "tokenizer"
    assert recorded_stop_ids(source) == meta["stop_token_ids"]
    engine = load_engine(str(model), tokenizer=out, max_tokens=16)
    assert set(meta["stop_token_ids"]) <= set(engine.stop_ids)
    assert engine.stop_ids == collect_stop_ids(engine.tokenizer, source)
    request = parse_chat_request(json.dumps(BODY).encode())
    prompt = engine.render(request)
    assert len(prompt) == prompt_len
    result = GenerationResult(prompt_tokens=prompt_len)
    text = "".join(engine.generate(prompt, max_new_tokens=16, temperature=None, top_p=None, seed=None, result=result))
    assert (text, result.finish_reason) == ("Hi", "stop")
    # without the recorded ids the same model runs on past the planted end of turn
    plain = load_engine(str(model), max_tokens=16)
    assert bang[0] not in plain.stop_ids
