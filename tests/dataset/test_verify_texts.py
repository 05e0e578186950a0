"""``verify``'s text check: a kept context holding a text the dataset's target Pi does not write is a mismatch."""

from __future__ import annotations

from pathlib import Path

import orjson

from harnessfit.dataset.verify import _check_texts


def _record(result: str) -> dict:
    return {
        "id": "r1",
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "write", "arguments": '{"path":"a","content":"x"}'},
                    }
                ],
            },
            {"role": "tool", "content": result, "tool_call_id": "c1"},
            {"role": "assistant", "content": "done"},
        ],
    }


def test_a_context_with_an_older_pis_text_fails_verify(tmp_path: Path) -> None:
    (tmp_path / "sft").mkdir()
    (tmp_path / "sft" / "train.jsonl").write_bytes(orjson.dumps(_record("Successfully wrote to a")) + b"\n")
    assert _check_texts(tmp_path, {"harness": "pi@1.6.0"}) is None
    (tmp_path / "sft" / "train.jsonl").write_bytes(orjson.dumps(_record("Successfully wrote 1 bytes to a")) + b"\n")
    found = _check_texts(tmp_path, {"harness": "pi@1.6.0"})
    assert found is not None and not found.ok and found.file == "sft/train.jsonl" and found.record_id == "r1"
    assert "Successfully wrote {bytes} bytes to {path}" in (found.detail or "")
    assert _check_texts(tmp_path, {"harness": "pi@0.82.0"}) is None  # the same text is 0.82.0's
