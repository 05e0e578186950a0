"""The real Pi CLI (``@mariozechner/pi-coding-agent``): install it into harnessfit's own folder, configure it for a
local OpenAI-compatible endpoint, and run it unattended.

Everything here is about running the genuine npm package, never a re-implementation: the harness card, the
validator test and the eval runner all drive this binary. Each run gets its own HOME (``pi_env``) so the user's
own Pi settings, sessions and API keys never leak into a capture or an eval.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from harnessfit.errors import UserError
from harnessfit.npm import install_npm_folder
from harnessfit.paths import harness_dir

__all__ = [
    "DEFAULT_PI_VERSION",
    "PI_PACKAGE",
    "PiRun",
    "install_pi",
    "pi_binary",
    "pi_version",
    "write_pi_agent_config",
    "pi_env",
    "pi_command",
    "run_pi",
]

DEFAULT_PI_VERSION = "0.73.1"
PI_PACKAGE = "@mariozechner/pi-coding-agent"
_PROVIDER = "local"


def _bin_in(folder: Path) -> Path:
    return folder / "node_modules" / ".bin" / "pi"


def pi_version(binary: Path, env: dict[str, str] | None = None) -> str | None:
    """What ``pi --version`` prints (stripped), or None when it does not run."""
    try:
        proc = subprocess.run(
            [str(binary), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    out = (proc.stdout or proc.stderr).strip().splitlines()
    return out[-1].strip() if out else None


def install_pi(version: str = DEFAULT_PI_VERSION) -> Path:
    """Install Pi ``version`` from npm into ``harness_dir("pi", version)`` and return the ``pi`` binary's path.

    Idempotent (a working install is kept) and safe under concurrency: ``harnessfit.npm.install_npm_folder`` holds
    one file lock per version and renames its temporary folder into place only after ``pi --version`` printed
    ``version``.
    """

    def verify(folder: Path) -> str | None:
        binary = _bin_in(folder)
        got = pi_version(binary) if binary.exists() else None
        return None if got == version else f"`pi --version` printed {got!r}"

    target = install_npm_folder(harness_dir("pi", version), {PI_PACKAGE: version}, verify=verify, name="harnessfit-pi")
    return _bin_in(target)


def pi_binary(version: str = DEFAULT_PI_VERSION) -> Path:
    """Path of an installed Pi binary; a UserError that says how to install it when it is missing."""
    binary = _bin_in(harness_dir("pi", version))
    if not binary.exists():
        raise UserError(f"Pi {version} is not installed: run `harnessfit harness install pi --version {version}`")
    return binary


def write_pi_agent_config(
    agent_dir: Path,
    base_url: str,
    model_id: str,
    *,
    context_window: int = 32768,
    max_tokens: int = 4096,
    eval_settings: bool = True,
    reasoning: bool = False,
) -> None:
    """Write ``models.json`` (one ``local`` provider pointing at ``base_url``) and ``settings.json`` into ``agent_dir``.

    ``eval_settings`` turns off retries and auto-compaction so that one model reply is one request (otherwise an
    HTTP 500 turns into a dozen retried requests and compaction sends summarisation requests of its own).
    """
    agent_dir.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            _PROVIDER: {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": "dummy",
                "compat": {
                    "supportsDeveloperRole": False,
                    "supportsStore": False,
                    "supportsReasoningEffort": False,
                    "maxTokensField": "max_tokens",
                },
                "models": [
                    {
                        "id": model_id,
                        "reasoning": reasoning,
                        "contextWindow": context_window,
                        "maxTokens": max_tokens,
                    }
                ],
            }
        }
    }
    settings: dict[str, Any] = {"quietStartup": True}
    if eval_settings:
        settings = {
            "retry": {"enabled": False, "provider": {"maxRetries": 0}},
            "compaction": {"enabled": False},
            "quietStartup": True,
        }
    (agent_dir / "models.json").write_bytes(orjson.dumps(models, option=orjson.OPT_INDENT_2))
    (agent_dir / "settings.json").write_bytes(orjson.dumps(settings, option=orjson.OPT_INDENT_2))


def pi_env(home: Path, agent_dir: Path | None = None) -> dict[str, str]:
    """An isolated environment for one Pi run: its own HOME, offline mode, PATH (and locale/timezone) kept."""
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PI_OFFLINE": "1",
        "PI_CODING_AGENT_DIR": str(agent_dir if agent_dir is not None else home / ".pi" / "agent"),
        "NO_COLOR": "1",
    }
    for key in ("LANG", "LC_ALL", "TZ", "TMPDIR", "NODE_OPTIONS"):
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def pi_command(
    version: str,
    model_id: str,
    prompt: str,
    *,
    session_dir: Path | str | None = None,
    tools: Sequence[str] = ("read", "bash", "edit", "write"),
    extra_args: Sequence[str] = (),
    context_files: bool = False,
) -> list[str]:
    """The argument list of one unattended json-mode run (isolation flags on; ``-nc`` unless ``context_files``)."""
    cmd = [
        str(pi_binary(version)),
        "--mode",
        "json",
        "--no-extensions",
        "--no-skills",
        "--no-prompt-templates",
        "--no-themes",
    ]
    if not context_files:
        cmd.append("-nc")
    cmd += ["--model", f"{_PROVIDER}/{model_id}", "--tools", ",".join(tools)]
    if session_dir is not None:
        cmd += ["--session-dir", str(session_dir)]
    cmd += list(extra_args)
    cmd.append(prompt)
    return cmd


@dataclass
class PiRun:
    """What one Pi run left: exit code, the json-mode events in order, stderr, and whether it timed out."""

    returncode: int
    events: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""
    timed_out: bool = False
    unparsed: list[str] = field(default_factory=list)

    def messages(self) -> list[dict[str, Any]]:
        """Messages from ``message_end`` events (assistant turns and tool results), in order."""
        return [e["message"] for e in self.events if e.get("type") == "message_end" and "message" in e]

    def tool_results(self) -> list[dict[str, Any]]:
        """``tool_execution_end`` events: ``toolCallId``, ``toolName``, ``result``, ``isError``."""
        return [e for e in self.events if e.get("type") == "tool_execution_end"]

    def stop_reason(self) -> str | None:
        """``stopReason`` of the last assistant message (json mode exits 0 even when the endpoint failed)."""
        for msg in reversed(self.messages()):
            if msg.get("role") == "assistant":
                return msg.get("stopReason")
        return None


def run_pi(cmd: Sequence[str], *, cwd: Path, env: dict[str, str], timeout: float = 120.0) -> PiRun:
    """Run a ``pi_command`` with stdin from /dev/null and parse its json event stream."""
    try:
        proc = subprocess.run(
            list(cmd), cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout
        )
        out, err, code, timed_out = proc.stdout, proc.stderr, proc.returncode, False
    except subprocess.TimeoutExpired as exc:
        out, err, code, timed_out = exc.stdout or b"", exc.stderr or b"", 124, True
    except OSError as exc:
        raise UserError(f"could not start Pi ({cmd[0]}): {exc}") from exc
    run = PiRun(returncode=code, stderr=err.decode("utf-8", "replace"), timed_out=timed_out)
    for line in out.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError:
            run.unparsed.append(line)
            continue
        if isinstance(event, dict):
            run.events.append(event)
        else:
            run.unparsed.append(line)
    return run
