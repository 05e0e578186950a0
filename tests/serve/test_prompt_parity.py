"""Serving builds the prompt training was audited on: same messages conversion, same template, same token ids."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from harnessfit.core import jsonio
from harnessfit.core.records import SFTRecord
from harnessfit.models import load_tokenizer
from harnessfit.serve.engine import render_prompt
from harnessfit.serve.protocol import parse_chat_request
from harnessfit.tokens import audit, render_record

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read the contents of a file.",
            "parameters": {
                "type": "object",
                "required": ["path"],
                "properties": {
                    "path": {"type": "string", "description": "Path to the file"},
                    "offset": {"type": "number", "description": "Line to start at"},
                },
            },
            "strict": False,
        },
    },
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a bash command.",
            "parameters": {
                "type": "object",
                "required": ["command"],
                "properties": {"command": {"type": "string", "description": "Command"}},
            },
            "strict": False,
        },
    },
]

# Pi's wire shapes: system string; user content as a list of text parts; assistant with null content and compact
# JSON arguments (one of them double-encoded, as a faulty model sends it); tool results as strings.
MESSAGES = [
    {
        "role": "system",
        "content": "You are an expert coding assistant operating inside pi, a coding agent harness.\n"
        "Current working directory: /work/demo",
    },
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Fix the failing test in calc.py."},
            {"type": "text", "text": "Then run `python -m pytest -q`."},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path":"calc.py"}'}}
        ],
    },
    {"role": "tool", "content": "def add(a, b):\n    return a - b\n", "tool_call_id": "call_1"},
    {
        "role": "assistant",
        "content": "Reading the test too.",
        "tool_calls": [
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "read", "arguments": json.dumps('{"path":"test_calc.py"}')},
            }
        ],
    },
    {
        "role": "tool",
        "content": 'Validation failed for tool "read":\n  - root: must be object',
        "tool_call_id": "call_2",
    },
]
ACTION = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_3",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"command":"python -m pytest -q"}'},
        }
    ],
}


def _record() -> SFTRecord:
    return SFTRecord(
        id="parity-1",
        conversation_id="c1",
        split="train",
        action_index=2,
        messages=MESSAGES,
        tools=TOOLS,
        action=ACTION,
        source="pi",
        group="g1",
    )


def _server_prompt(tokenizer) -> list[int]:
    body = {
        "model": "m",
        "messages": MESSAGES,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": 64,
        "tools": TOOLS,
    }
    return render_prompt(tokenizer, parse_chat_request(json.dumps(body).encode()))


@pytest.mark.slow
def test_served_prompt_equals_audited_prefix(tmp_path: Path) -> None:
    rec = _record()
    # 1) the render functions themselves, on the embedded tokenizer
    tok = load_tokenizer("embedded")
    rendered = render_record(tok, rec)
    assert rendered.violations == []
    served = _server_prompt(tok)
    assert served == rendered.input_ids[: rendered.n_prompt]
    text = tok.decode(served)
    assert "Fix the failing test in calc.py.\nThen run `python -m pytest -q`." in text  # parts joined with "\n"
    assert '"arguments": "{\\"path\\":\\"test_calc.py\\"}"' in text  # double encoding stays visible
    # 2) through the files: the audit's tokenized row vs the server's tokenizer loaded from the audit's tokenizer/
    data = tmp_path / "ds"
    (data / "sft").mkdir(parents=True)
    jsonio.write_jsonl(data / "sft" / "train.jsonl", [rec.model_dump()])
    out = tmp_path / "ds-audit"
    audit(data, "embedded", out, progress=False)
    row = pq.read_table(out / "tokenized" / "train.parquet").to_pylist()[0]
    n_prompt = row["assistant_masks"].index(1)
    server_tok = load_tokenizer(str(out / "tokenizer"), template="auto")
    assert _server_prompt(server_tok) == row["input_ids"][:n_prompt]


@pytest.mark.parametrize("bad", [[{"type": "image_url", "image_url": {"url": "x"}}], 7])
def test_non_text_content_is_refused_the_same_way(bad) -> None:
    from harnessfit.serve.protocol import ApiError
    from harnessfit.tokens import Problem, RecordError

    tok = load_tokenizer("embedded")
    msgs = [MESSAGES[0], {"role": "user", "content": bad}]
    with pytest.raises(RecordError) as rec_err:
        render_record(tok, SFTRecord(**{**_record().model_dump(), "messages": msgs}))
    assert rec_err.value.problem == Problem.invalid_record
    if isinstance(bad, list):
        body = {"model": "m", "messages": msgs}
        with pytest.raises(ApiError) as api_err:
            _ = render_prompt(tok, parse_chat_request(json.dumps(body).encode()))
        assert api_err.value.status == 400 and "messages[1].content[0]" in api_err.value.message
