"""A second harness, registered through the same registry, runs one eval episode through the same runner, scorer and
report as Pi: the ``Harness`` interface (``harness/base.py``) is all the eval side needs of an agent CLI.

The harness is a tiny scripted agent CLI (``data/scripted_cli/agent.py``: its own wire requests, tools and session
format, no Pi anywhere) driven by the scripted ``golden`` model; the episode runs sandboxed like Pi's.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest

from harnessfit.harness.base import (
    EpisodeSetup,
    Harness,
    Launch,
    Transcript,
    get_harness,
    register_harness,
    unregister_harness,
)
from harnessfit.harness.versions import parse_harness

AGENT = Path(__file__).parent / "data" / "scripted_cli" / "agent.py"
PYTHON = "/usr/bin/python3"  # the system's: the sandbox shows system folders, not a virtualenv
TASK = "create_hello_script"


def _records(path: Path | None) -> list[dict[str, Any]]:
    if path is None or not path.is_file():
        return []
    out = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return [r for r in out if isinstance(r, dict)]


def _message(record: dict[str, Any]) -> dict[str, Any]:
    """One record of the agent's own format in the wire message model the scorers read."""
    if record.get("k") == "user":
        return {"role": "user", "content": [{"type": "text", "text": record["text"]}]}
    if record.get("k") == "tool":
        return {
            "role": "toolResult",
            "toolCallId": record["id"],
            "toolName": record["tool"],
            "isError": record["error"],
            "content": [{"type": "text", "text": record["out"]}],
        }
    calls = [
        {"type": "toolCall", "id": c["id"], "name": c["tool"], "arguments": orjson.loads(c["args"])}
        for c in record.get("calls") or []
    ]
    usage = record.get("usage") or {}
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": record.get("text") or ""}, *calls],
        "stopReason": "toolUse" if calls else "stop",
        "usage": {
            "input": usage.get("prompt_tokens", 0),
            "output": usage.get("completion_tokens", 0),
            "totalTokens": usage.get("total_tokens", 0),
        },
    }


class ScriptedCli(Harness):
    """The test's agent CLI as a harness: no install, no card; read back from its stdout, the session file checked."""

    title = "Scripted CLI"
    default_version = "1.0.0"

    def install(self, version: str, **options: Any) -> Path:
        return AGENT

    def binary(self, version: str) -> Path:
        return AGENT

    def launch(self, version: str, setup: EpisodeSetup) -> Launch:
        cmd = [
            PYTHON,
            str(AGENT),
            setup.base_url,
            setup.model_id,
            str(setup.session_dir),
            str(setup.max_turns),
            setup.prompt,
        ]
        env = {"HOME": setup.home_inside, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        return Launch(cmd, env, [AGENT.parent])

    def started(self, stdout_file: Path) -> str | None:
        first = _records(stdout_file)[:1]
        return None if first and first[0].get("k") == "user" else "scripted-cli printed no record"

    def session_file(self, session_dir: Path) -> Path | None:
        path = session_dir / "session.log"
        return path if path.exists() and stat.S_ISREG(path.lstat().st_mode) else None

    def transcript(self, stdout_file: Path, session_file: Path | None, *, killed: bool) -> Transcript:
        printed, kept = _records(stdout_file), _records(session_file)
        mismatch = None if not kept or kept == printed else "the session file differs from what the agent printed"
        return Transcript([_message(r) for r in printed], "agent output", mismatch)


@pytest.fixture
def scripted_cli():
    register_harness("scripted-cli")(ScriptedCli)
    yield "scripted-cli@1.0.0"
    unregister_harness("scripted-cli")


def test_the_registry_resolves_a_registered_harness(scripted_cli) -> None:
    assert isinstance(get_harness(scripted_cli), ScriptedCli)
    assert parse_harness("scripted-cli") == ("scripted-cli", "1.0.0")  # its own default version
    assert get_harness("pi@1.6.0").title == "Pi"


@pytest.mark.slow
def test_a_second_harness_runs_an_episode_through_the_same_runner_scorer_and_report(
    scripted_cli, small_suite, tmp_path: Path
) -> None:
    from harnessfit.eval.run import run_eval
    from harnessfit.report.build import build_report

    out = tmp_path / "run"
    results = run_eval("scripted:golden", small_suite, out, harness=scripted_cli, task_ids=[TASK], progress=False)
    assert results.status == "success" and results.harness == scripted_cli and results.pi_version == "1.0.0"
    [ep] = results.episodes
    assert ep.facts.status == "success", ep.facts.error
    assert ep.facts.sandbox == "bwrap" and ep.facts.session_file == f"episodes/{TASK}/seed-0/sessions/session.log"
    m = ep.metrics
    # the golden solver's write, its bash check and its final answer: scored by the same scorers as a Pi episode
    assert (m.complete_loop, m.validation_used, m.final_validation_clean) == (True, True, True), m
    assert (m.turns, m.tool_calls_total, m.tool_calls_valid, m.stop_reason) == (3, 2, 2, "stop")
    assert m.integrity_flag is None and m.tokens_total > 0
    assert (out / f"episodes/{TASK}/seed-0/workspace/hello.py").read_text() == 'print("hello world")\n'
    assert "- Scripted CLI 1.0.0; seeds 1" in (out / "results.md").read_text()

    site = build_report(out).index.parent
    [page] = list(site.glob(f"episodes/*/{TASK}/seed-0.html"))
    html = page.read_text()
    assert "Scripted CLI exit code" in html and "python3 check_hello.py" in html and "hello world" in html
    assert "pi-export" not in html  # this harness makes no session export
