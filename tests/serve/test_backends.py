"""vLLM command builder, backend choice, LoRA adapter + tokenizer pickup, and the ``harnessfit serve`` CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.errors import UserError
from harnessfit.serve import build_vllm_command, choose_backend, prepare_vllm

pytestmark = pytest.mark.xdist_group("serve-builtin")  # share the scripted-model factory with test_server

MSGS = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]


def test_build_vllm_command_pins_template_parser_lora_and_loopback(tmp_path: Path) -> None:
    cmd = build_vllm_command(
        "/models/base",
        port=8123,
        served_name="base",
        chat_template=tmp_path / "t.jinja",
        generation_config_dir=tmp_path / "gen",
        adapter=Path("/runs/sft/adapter"),
        adapter_name="tuned",
        lora_rank=32,
        max_model_len=16384,
    )
    assert cmd[:3] == ["vllm", "serve", "/models/base"]
    pairs = {cmd[i]: cmd[i + 1] for i in range(3, len(cmd) - 1) if cmd[i].startswith("--")}
    assert pairs["--host"] == "127.0.0.1" and pairs["--port"] == "8123"
    assert pairs["--chat-template"] == str(tmp_path / "t.jinja")
    assert pairs["--tool-call-parser"] == "hermes"
    assert pairs["--generation-config"] == str(tmp_path / "gen")
    assert pairs["--max-model-len"] == "16384"
    assert pairs["--lora-modules"] == "tuned=/runs/sft/adapter"
    assert pairs["--max-lora-rank"] == "32"
    assert "--enable-auto-tool-choice" in cmd and "--enable-lora" in cmd


@pytest.mark.slow  # imports torch: 9 s in the fast tier
def test_auto_backend_is_builtin_without_vllm_and_cuda() -> None:
    import importlib.util

    import torch

    if importlib.util.find_spec("vllm") is not None and torch.cuda.is_available():
        pytest.skip("this machine has vLLM and CUDA")
    assert choose_backend("auto") == "builtin"
    with pytest.raises(UserError, match="vllm"):
        choose_backend("vllm")
    with pytest.raises(UserError, match="unknown backend"):
        choose_backend("llamacpp")


RUN_MARK = "{#- saved by this training run #}"


def _tiny_adapter(model_dir: Path, out: Path, training_tokenizer) -> Path:
    """A training run's output: a LoRA adapter (B starts at zero, so it changes nothing) and ``tokenizer/`` holding
    the run's training template (marked, so the test can tell it from the model's)."""
    import copy

    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(model_dir))
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], fan_in_fan_out=True))
    peft_model.save_pretrained(str(out / "adapter"))
    tok = copy.deepcopy(training_tokenizer)
    tok.chat_template = RUN_MARK + tok.chat_template
    tok.save_pretrained(str(out / "tokenizer"))
    return out / "adapter"


@pytest.fixture(scope="module")
def scripted_hello(scripted_factory) -> Path:
    f = scripted_factory
    body = {"model": "m", "messages": MSGS}
    im_end = f.token_id("<|im_end|>")
    return f.build("hello-only", [(f.prompt_len(body), f.encode("Hello") + [im_end])], eos_ids=[im_end])


@pytest.mark.slow
def test_prepare_vllm_writes_training_template_and_every_stop_id(scripted_factory, scripted_hello, tmp_path) -> None:
    adapter = _tiny_adapter(scripted_hello, tmp_path / "run", scripted_factory.tokenizer)
    launch = prepare_vllm(str(scripted_hello), workdir=tmp_path / "vllm", port=9000, adapter=adapter, max_tokens=64)
    assert launch.model_id == "adapter"
    template = launch.files["chat_template"].read_text()
    assert template == RUN_MARK + scripted_factory.tokenizer.chat_template  # the run's template, not SmolLM2's
    gen = json.loads((launch.files["generation"] / "generation_config.json").read_text())
    assert scripted_factory.token_id("<|im_end|>") in gen["eos_token_id"]
    assert gen["max_new_tokens"] == 64
    # Pi names no temperature; vLLM would then sample at 1.0 unless its generation config names one: greedy by default
    assert gen["temperature"] == 0.0 and gen["do_sample"] is False
    hot = prepare_vllm(str(scripted_hello), workdir=tmp_path / "hot", port=9001, max_tokens=64, temperature=0.7)
    hot_gen = json.loads((hot.files["generation"] / "generation_config.json").read_text())
    assert hot_gen["temperature"] == 0.7 and hot_gen["do_sample"] is True
    assert f"adapter={adapter}" in launch.command
    assert launch.command[launch.command.index("--max-lora-rank") + 1] == "8"
    assert launch.context_window == 384  # the model's own context, what vLLM serves without --max-model-len


@pytest.mark.slow  # loads the embedded model's config and tokenizer: 31 s
def test_vllm_handle_gives_pi_the_model_context(tmp_path: Path) -> None:
    from harnessfit.serve import ServerHandle, write_harness_config

    launch = prepare_vllm("embedded", workdir=tmp_path / "vllm", port=9001, max_tokens=32)
    assert launch.context_window == 8192
    assert prepare_vllm("embedded", workdir=tmp_path / "v2", port=9001, max_model_len=4096).context_window == 4096
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    handle = ServerHandle(
        "http://127.0.0.1:9001/v1", launch.model_id, done, "vllm", tmp_path / "log", 32, launch.context_window
    )
    agent = write_harness_config(tmp_path / "agent", handle)
    model = json.loads((agent / "models.json").read_text())["providers"]["local"]["models"][0]
    assert (model["contextWindow"], model["maxTokens"]) == (8192, 32)


@pytest.mark.slow
def test_adapter_is_applied_and_its_tokenizer_used(scripted_factory, scripted_hello, tmp_path) -> None:
    from harnessfit.serve.engine import GenerationResult, load_engine
    from harnessfit.serve.protocol import parse_chat_request

    adapter = _tiny_adapter(scripted_hello, tmp_path / "run", scripted_factory.tokenizer)
    engine = load_engine(str(scripted_hello), adapter=adapter, max_tokens=8)
    assert engine.model_id == "adapter"
    assert engine.tokenizer.chat_template.startswith(RUN_MARK)
    assert not hasattr(engine.model, "peft_config")  # merged into the base weights
    request = parse_chat_request(json.dumps({"model": "adapter", "messages": MSGS}).encode())
    ids = engine.render(request)
    result = GenerationResult(prompt_tokens=len(ids))
    text = "".join(engine.generate(ids, max_new_tokens=8, temperature=None, top_p=None, seed=None, result=result))
    assert (text, result.finish_reason) == ("Hello", "stop")


@pytest.mark.slow
def test_cli_bad_inputs_end_with_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["serve", str(tmp_path / "nope"), "--backend", "builtin"], standalone_mode=False)
    assert isinstance(missing.exception, UserError) and "not found" in str(missing.exception)
    (tmp_path / "m").mkdir()
    bad_adapter = runner.invoke(app, ["serve", str(tmp_path / "m"), "--adapter", str(tmp_path)], standalone_mode=False)
    assert isinstance(bad_adapter.exception, UserError) and "adapter_config.json" in str(bad_adapter.exception)
    proc = subprocess.run(
        [sys.executable, "-m", "harnessfit.cli", "serve", str(tmp_path / "nope"), "--backend", "builtin"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "model folder not found" in proc.stderr


@pytest.mark.slow
def test_cli_serve_writes_pi_config(scripted_hello, tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    agent = tmp_path / "agent"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harnessfit.cli",
            "serve",
            str(scripted_hello),
            "--port",
            "0",
            "--backend",
            "builtin",
            "--model-id",
            "m",
            "--max-tokens",
            "16",
            "--pi-config",
            str(agent),
            "--ready-file",
            str(ready),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not (ready.exists() and (agent / "models.json").exists()):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline
            time.sleep(0.2)
        info = json.loads(ready.read_text())
        provider = json.loads((agent / "models.json").read_text())["providers"]["local"]
        assert provider["baseUrl"] == info["base_url"]
        assert provider["models"][0]["id"] == "m" and provider["models"][0]["maxTokens"] == 16
        r = httpx.post(f"{info['base_url']}/chat/completions", json={"model": "m", "messages": MSGS}, timeout=60)
        assert r.json()["choices"][0]["message"]["content"] == "Hello"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


@pytest.mark.slow  # prepares a vLLM launch of the embedded model: 137 s on a busy machine
def test_vllm_program_comes_from_env_or_its_own_virtualenv(tmp_path: Path, monkeypatch) -> None:
    """vLLM pins its own torch/transformers, so `make setup GPU=1` installs it in $HARNESSFIT_HOME/vllm; the
    launcher runs that program (or $HARNESSFIT_VLLM), and a path that is not a file means no vLLM."""
    import importlib.util

    from harnessfit.serve.vllm import vllm_executable

    monkeypatch.setenv("HARNESSFIT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HARNESSFIT_VLLM", raising=False)
    if importlib.util.find_spec("vllm") is None:
        assert vllm_executable() is None
    own = tmp_path / "home" / "vllm" / "bin" / "vllm"
    own.parent.mkdir(parents=True)
    own.write_text("#!/bin/sh\n")
    assert vllm_executable() == str(own)
    other = tmp_path / "elsewhere-vllm"
    other.write_text("#!/bin/sh\n")
    monkeypatch.setenv("HARNESSFIT_VLLM", str(other))
    assert vllm_executable() == str(other)
    launch = prepare_vllm("embedded", workdir=tmp_path / "w", port=9002, max_tokens=16)
    assert launch.command[:2] == [str(other), "serve"]
    monkeypatch.setenv("HARNESSFIT_VLLM", str(tmp_path / "missing"))
    assert vllm_executable() is None


def test_the_builtin_server_is_started_with_the_eval_temperature(tmp_path: Path) -> None:
    from harnessfit.serve.launcher import _builtin_command

    common = dict(adapter=None, tokenizer=None, port=0, max_tokens=64, model_id=None, threads=1, best_of=1,
                  best_of_log=None, max_queue=None)  # fmt: skip
    cmd = _builtin_command("smollm2-135m", tmp_path / "ready.json", temperature=0.7, **common)
    assert cmd[cmd.index("--temperature") + 1] == "0.7"
    assert "--temperature" not in _builtin_command("smollm2-135m", tmp_path / "ready.json", **common)
