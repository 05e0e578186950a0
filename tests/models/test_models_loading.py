"""harnessfit.models: the embedded model converts once (race-safe), loads, and carries the training template."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harnessfit.errors import UserError
from harnessfit.models import (
    CHATML_TOOLS,
    EMBEDDED_MODEL,
    load_model,
    load_tokenizer,
    native_context_length,
    resolve_model,
    stop_token_ids,
    template_info,
)
from harnessfit.models.embedded import MARKER_FILE

_CONVERT = "from harnessfit.models import resolve_model; print(resolve_model('embedded'))"


@pytest.mark.slow
@pytest.mark.xdist_group("embedded-convert")
def test_embedded_conversion_is_atomic_when_two_processes_race(tmp_path: Path) -> None:
    env = {**os.environ, "HARNESSFIT_HOME": str(tmp_path / "home")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CONVERT], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    folders = {o[0].strip() for o in outs}
    assert len(folders) == 1
    folder = Path(folders.pop())
    assert (folder / MARKER_FILE).is_file() and (folder / "model.safetensors").is_file()
    # exactly one conversion happened; the loser waited on the lock and reused the folder
    assert sum("converting the embedded model" in o[1] for o in outs) == 1
    leftovers = [p.name for p in folder.parent.iterdir() if ".tmp-" in p.name]
    assert leftovers == []
    again = subprocess.run([sys.executable, "-c", _CONVERT], env=env, capture_output=True, text=True, check=True)
    assert "converting" not in again.stderr and again.stdout.strip() == str(folder)


@pytest.mark.slow
def test_embedded_model_loads_as_fp32_llama() -> None:
    model = load_model(EMBEDDED_MODEL)
    assert type(model).__name__ == "LlamaForCausalLM"
    assert str(model.dtype) == "torch.float32"
    assert 130_000_000 < sum(p.numel() for p in model.parameters()) < 140_000_000


def test_embedded_tokenizer_gets_chatml_tool_template_and_records_it(tmp_path: Path) -> None:
    tok = load_tokenizer("embedded")
    info = template_info(tok)
    assert info.name == CHATML_TOOLS and tok.init_kwargs["harnessfit_template"] == CHATML_TOOLS
    assert "{% generation %}" in info.text.replace("{%-", "{%")
    tools = [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    text = tok.apply_chat_template(
        [
            {"role": "system", "content": "SYS"},
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"type": "function", "function": {"name": "read", "arguments": {"path": "a.txt"}}}],
            },
        ],
        tools=tools,
        tokenize=False,
    )
    assert '"name": "read"' in text and '{"path": "a.txt"}' in text and "You are Qwen" not in text
    # saved and reloaded: same template, same name, response parser kept
    tok.save_pretrained(tmp_path / "tok")
    again = load_tokenizer(str(tmp_path / "tok"), template="native")
    assert template_info(again).sha256 == info.sha256
    assert template_info(again).name == CHATML_TOOLS
    parsed = again.parse_response(
        '<tool_call>\n{"name": "read", "arguments": {"path": "x"}}\n</tool_call><|im_end|>', prefix=""
    )
    assert parsed["tool_calls"][0]["function"] == {"name": "read", "arguments": {"path": "x"}}


def test_native_template_of_smollm2_is_refused_by_auto_because_it_drops_tools() -> None:
    native = load_tokenizer("embedded", template="native")
    assert template_info(native).name == "native"
    assert "tool_calls" not in native.chat_template


def test_stop_tokens_and_native_context() -> None:
    tok = load_tokenizer("embedded")
    ids = stop_token_ids(tok)
    assert tok.convert_tokens_to_ids("<|im_end|>") in ids
    assert stop_token_ids("embedded") == ids
    assert native_context_length("embedded") == 8192


def test_resolve_model_kinds(tmp_path: Path) -> None:
    assert resolve_model("Qwen/Qwen3-0.6B", check_hub=False) == "Qwen/Qwen3-0.6B"
    assert resolve_model(str(tmp_path)) == tmp_path.resolve()
    with pytest.raises(UserError, match="not found"):
        resolve_model(str(tmp_path / "missing"))
    with pytest.raises(UserError, match="no model"):
        resolve_model("  ")


def test_template_option_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="template must be"):
        load_tokenizer("embedded", template=str(tmp_path / "nope.jinja"))
    custom = tmp_path / "mine.jinja"
    custom.write_text("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    tok = load_tokenizer("embedded", template=str(custom))
    assert template_info(tok).name == "file:mine.jinja"


def _resolve_in_subprocess(spec: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    code = (
        "from harnessfit.errors import UserError\nfrom harnessfit.models import resolve_model\n"
        f"try:\n    print('OK', resolve_model({spec!r}))\nexcept UserError as e:\n    print('ERR', e)"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={**os.environ, **env}
    )


def test_unknown_hub_model_fails_fast_naming_the_embedded_models(tmp_path: Path) -> None:
    """No network here: a Hub id that is not cached ends in one line within seconds (not ~51 s of retries), with the
    embedded names and the closest one offered; HF_HUB_OFFLINE says so; a cached model passes untouched."""
    cache = tmp_path / "hub"
    snap = cache / "models--acme--tiny" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (cache / "models--acme--tiny" / "refs").mkdir()
    (cache / "models--acme--tiny" / "refs" / "main").write_text("0" * 40)
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": ""}
    import time

    t0 = time.monotonic()
    online = _resolve_in_subprocess("acme/smollm2-135", env)
    assert time.monotonic() - t0 < 30
    assert online.stdout.startswith("ERR "), online.stdout + online.stderr
    assert "cannot be reached" in online.stdout and "did you mean 'smollm2-135m'" in online.stdout
    offline = _resolve_in_subprocess("acme/other", {**env, "HF_HUB_OFFLINE": "1"})
    assert offline.stdout.startswith("ERR ") and "HF_HUB_OFFLINE is set" in offline.stdout
    assert "embedded models: embedded, smollm2-135m" in offline.stdout
    cached = _resolve_in_subprocess("acme/tiny", {**env, "HF_HUB_OFFLINE": "1"})
    assert cached.stdout.strip() == "OK acme/tiny", cached.stdout + cached.stderr
