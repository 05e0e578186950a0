"""The real Pi CLI talks to the built-in backend serving the embedded model: one short turn, end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.harness.pi import DEFAULT_PI_VERSION, install_pi, pi_command, pi_env, run_pi
from harnessfit.serve import start_server, write_harness_config


@pytest.mark.slow
@pytest.mark.pi
@pytest.mark.xdist_group("serve-pi")
def test_real_pi_gets_a_reply_from_the_builtin_server(tmp_path: Path) -> None:
    install_pi(DEFAULT_PI_VERSION)  # no-op when `make test` already installed it
    log = tmp_path / "server.log"
    with start_server("smollm2-135m", max_tokens=6, backend="builtin", log_path=log) as handle:
        home = tmp_path / "home"
        agent_dir = write_harness_config(home / ".pi" / "agent", handle)
        workspace = tmp_path / "ws"
        workspace.mkdir()
        cmd = pi_command(DEFAULT_PI_VERSION, handle.model_id, "Say hello.", session_dir=tmp_path / "sessions")
        run = run_pi(cmd, cwd=workspace, env=pi_env(home, agent_dir), timeout=300)
    assert run.returncode == 0, run.stderr
    replies = [m for m in run.messages() if m.get("role") == "assistant"]
    assert len(replies) == 1, run.events[-3:]
    reply = replies[0]
    assert reply["stopReason"] in ("stop", "length"), reply.get("errorMessage")
    text = "".join(part.get("text", "") for part in reply["content"] if part.get("type") == "text")
    assert text.strip()
    assert reply["usage"]["input"] > 500  # Pi's system prompt and tool schemas reached the model
    assert "Traceback" not in log.read_text()
