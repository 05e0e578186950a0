"""Installing and configuring the real Pi CLI: idempotent install, clear one-line errors, isolated runs."""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from harnessfit.errors import UserError
from harnessfit.harness.card import load_card
from harnessfit.harness.pi.cli import (
    DEFAULT_PI_VERSION,
    _node_version,
    _satisfies,
    install_pi,
    installed_package,
    pi_binary,
    pi_command,
    pi_env,
    pi_package_dir,
    pi_version,
    run_pi,
    write_pi_agent_config,
)
from harnessfit.harness.scripted import Reply, ScriptedEndpoint
from harnessfit.harness.versions import NEWEST_PI_VERSION, PRIVATE_NODE_VERSION, private_node_package
from harnessfit.paths import harness_dir

HARNESSFIT = Path(sys.executable).parent / "harnessfit"


@pytest.mark.slow
@pytest.mark.pi
def test_install_is_idempotent_and_checked(pi_bin: Path) -> None:
    assert pi_bin == pi_binary(DEFAULT_PI_VERSION)
    assert pi_version(pi_bin) == DEFAULT_PI_VERSION
    before = pi_bin.resolve().stat().st_mtime_ns
    assert install_pi(DEFAULT_PI_VERSION) == pi_bin  # second call keeps the install
    assert pi_bin.resolve().stat().st_mtime_ns == before
    res = subprocess.run([str(HARNESSFIT), "harness", "install", "pi"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and DEFAULT_PI_VERSION in res.stdout


@pytest.mark.slow
def test_missing_node_is_one_clear_line(tmp_path: Path) -> None:
    env = {"PATH": str(HARNESSFIT.parent), "HARNESSFIT_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    res = subprocess.run(
        [str(HARNESSFIT), "harness", "install", "pi"], capture_output=True, text=True, env=env, timeout=120
    )
    assert res.returncode == 2
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "node" in lines[0] and "Traceback" not in res.stderr


def test_not_installed_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESSFIT_HOME", str(tmp_path))
    with pytest.raises(UserError, match=r"harnessfit harness install pi"):
        pi_binary("0.73.1")


@pytest.mark.slow
def test_npm_failure_is_one_clear_line(tmp_path: Path) -> None:
    env = {**os.environ, "HARNESSFIT_HOME": str(tmp_path / "home")}
    res = subprocess.run(
        [str(HARNESSFIT), "harness", "install", "pi", "--version", "0.0.0-no-such-version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 2
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "npm install of @mariozechner/pi-coding-agent@0.0.0-no-such-version failed" in lines[0]
    assert not (tmp_path / "home" / "harness" / "pi" / "0.0.0-no-such-version").exists()  # no half install left


@pytest.mark.pi
def test_agent_config_env_and_command(tmp_path: Path, pi_bin: Path) -> None:
    agent = tmp_path / "agent"
    write_pi_agent_config(agent, "http://127.0.0.1:9/v1", "my/model", context_window=8192, max_tokens=256)
    models = orjson.loads((agent / "models.json").read_bytes())
    local = models["providers"]["local"]
    assert local["baseUrl"] == "http://127.0.0.1:9/v1" and local["api"] == "openai-completions"
    assert local["compat"]["maxTokensField"] == "max_tokens" and local["compat"]["supportsStore"] is False
    assert local["models"] == [{"id": "my/model", "reasoning": False, "contextWindow": 8192, "maxTokens": 256}]
    settings = orjson.loads((agent / "settings.json").read_bytes())
    assert settings["retry"]["enabled"] is False and settings["compaction"]["enabled"] is False
    env = pi_env(tmp_path / "h", agent)
    assert env["HOME"] == str(tmp_path / "h") and env["PI_OFFLINE"] == "1" and env["PI_CODING_AGENT_DIR"] == str(agent)
    assert "OPENAI_API_KEY" not in env
    cmd = pi_command(DEFAULT_PI_VERSION, "my/model", "hi", session_dir=tmp_path / "s", tools=("read", "bash"))
    assert cmd[0] == str(pi_bin) and cmd[-1] == "hi"
    flags = ["--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes"]
    flags += [f for f in ("--no-approve", "--no-mcp") if f in load_card("pi", DEFAULT_PI_VERSION).cli["options"]]
    n = 3 + len(flags)
    assert cmd[1 : n + 2] == ["--mode", "json", *flags, "-nc", "--model"]
    assert cmd[n + 2 : n + 6] == ["local/my/model", "--tools", "read,bash", "--session-dir"]


@pytest.mark.slow
def test_new_scope_install_records_package_and_node() -> None:
    binary = install_pi(NEWEST_PI_VERSION)
    folder = harness_dir("pi", NEWEST_PI_VERSION)
    record = orjson.loads((folder / "harnessfit-install.json").read_bytes())
    assert record["package"] == installed_package(NEWEST_PI_VERSION) == "@earendil-works/pi-coding-agent"
    assert pi_version(binary) == NEWEST_PI_VERSION and install_pi(NEWEST_PI_VERSION) == binary
    assert pi_package_dir(NEWEST_PI_VERSION) == folder / "node_modules" / "@earendil-works" / "pi-coding-agent"
    if _satisfies(_node_version() or (0, 0, 0), record["engines_node"]):
        assert record["node"].startswith("system")
    else:  # the machine's node is too old: Pi runs on the node installed beside it, through harnessfit's wrapper
        assert binary == folder / "pi" and record["node"] == f"{private_node_package()}@{PRIVATE_NODE_VERSION}"
        assert (folder / "node_modules" / private_node_package() / "bin" / "node").is_file()


@pytest.mark.slow
def test_node_system_refuses_a_too_old_node_in_one_line(tmp_path: Path) -> None:
    if _satisfies(_node_version() or (0, 0, 0), ">=22.19.0"):
        pytest.skip("this machine's node already satisfies Pi 1.x")
    env = {**os.environ, "HARNESSFIT_HOME": str(tmp_path / "home")}
    res = subprocess.run(
        [str(HARNESSFIT), "harness", "install", "pi", "--version", NEWEST_PI_VERSION, "--node", "system"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert "needs node >=22.19.0 but this machine has v" in lines[0] and "--node auto" in lines[0]
    assert not (tmp_path / "home" / "harness" / "pi" / NEWEST_PI_VERSION).exists()


@pytest.mark.pi
@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.73.1", NEWEST_PI_VERSION])  # the oldest card and the newest (the default)
def test_a_real_run_sends_the_card_prompt_and_tools(tmp_path: Path, version: str) -> None:
    install_pi(version)
    card = load_card("pi", version)
    cwd = tmp_path / "work"
    cwd.mkdir()
    day = datetime.date.today().isoformat()
    with ScriptedEndpoint([Reply(text="Hi!")], model_id="m") as ep:
        write_pi_agent_config(tmp_path / "h" / ".pi" / "agent", ep.base_url, "m")
        run = run_pi(pi_command(version, "m", "Hello"), cwd=cwd, env=pi_env(tmp_path / "h"))
    assert run.returncode == 0 and run.stop_reason() == "stop"
    assert run.messages()[-1]["content"] == [{"type": "text", "text": "Hi!"}]
    body = ep.requests[0]
    system = body["messages"][0]["content"]
    m = re.search(r"Current date: (\d{4}-\d{2}-\d{2})", system)
    assert system == card.render_system_prompt(str(cwd), m.group(1) if m else day)  # default install_dir: install_pi's
    assert body["tools"] == card.tools and body["messages"][1] == {
        "role": "user",
        "content": [{"type": "text", "text": "Hello"}],
    }
