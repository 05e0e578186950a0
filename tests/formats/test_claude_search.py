"""Claude Code Grep/Glob/LS → Pi's optional grep/find/ls: only under the tools profile and only where Pi's text can be
rebuilt from the record (a content search of one file); every other case is the trajectory's blocker, with why: a
call Pi cannot make is no label, a call whose result cannot be rebuilt is one (the context after it is not).
The real Pi checks the rebuilt grep text in ``test_rebuilt_grep_text_is_what_pi_prints``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harnessfit.convert import to_conversation
from harnessfit.convert.wire import convert_trajectory
from harnessfit.core import Conversation, Provenance, Reason, Rejection, Step, ToolCall, Trajectory
from harnessfit.harness.card import load_card

DEFAULT, TOOLS = load_card("pi", "0.73.1"), load_card("pi", "0.73.1", "tools")


def _traj(call: dict, result: str, cwd: str = "/w") -> Trajectory:
    name = call.pop("_name", "Grep")
    steps = [Step(role="user", text="look"),
             Step(role="assistant", tool_calls=[ToolCall(id="t1", name=name, arguments=call)]),
             Step(role="tool", tool_call_id="t1", text=result),
             Step(role="assistant", text="found it")]
    return Trajectory(id="t", source="claude_code", steps=steps, cwd=cwd, date="2026-01-02", root_request_id="r",
                      provenance=Provenance(format="claude_code", file="f", sha256="0" * 64))


def _grep(**extra) -> dict:
    return {"pattern": "needle", "path": "/w/src/a.py", "output_mode": "content", "-n": True, **extra}


def test_a_content_search_of_one_file_becomes_pis_grep_text() -> None:
    conv = to_conversation(_traj(_grep(**{"-i": True}), "3:needle one\r\n7:x = needle"), TOOLS)
    assert isinstance(conv, Conversation), conv
    assert conv.messages[2]["tool_calls"][0]["function"] == {
        "name": "grep", "arguments": '{"pattern":"needle","path":"/w/src/a.py","ignoreCase":true}'}
    assert conv.messages[3]["content"] == "a.py:3: needle one\na.py:7: x = needle"
    # rg's form with the file name, and a path relative to the session's folder
    conv = to_conversation(_traj(_grep(path="src/a.py"), "src/a.py:3:needle one"), TOOLS)
    assert isinstance(conv, Conversation) and conv.messages[3]["content"] == "a.py:3: needle one"


def test_more_matches_than_pis_limit_end_with_its_note() -> None:
    record = "\n".join(f"{n}:needle {n}" for n in range(1, 131))
    conv = to_conversation(_traj(_grep(), record), TOOLS)
    assert isinstance(conv, Conversation), conv
    text = conv.messages[3]["content"]
    assert text.split("\n\n")[0].count("\n") == 99 and text.endswith(
        "[100 matches limit reached. Use limit=200 for more, or refine pattern]")


@pytest.mark.parametrize(("call", "record", "why"), [
    (_grep(output_mode="files_with_matches"), "Found 1 file\n/w/src/a.py", "lists files or counts"),
    ({"pattern": "needle", "path": "/w/a.py"}, "Found 1 file\n/w/a.py", "lists files or counts"),
    (_grep(**{"-C": 2}), "3:needle", "context lines"),
    ({"_name": "Glob", "pattern": "**/*.py", "path": "/w"}, "/w/a.py", "also lists folders"),
    ({"_name": "LS", "path": "/w"}, "- /w/\n  - a.py\n", "leaves out hidden entries"),
])
def test_a_call_pi_cannot_make_is_the_blocker(call: dict, record: str, why: str) -> None:
    out = convert_trajectory(_traj(dict(call), record), TOOLS)
    assert isinstance(out.record, Rejection) and out.record.reason == Reason.unmappable_arguments, out.record
    assert why in out.record.detail
    assert out.prefix is None and out.calls.fates == [Reason.unmappable_arguments.value]


@pytest.mark.parametrize(("call", "record", "why"), [
    (_grep(path="/w/src"), "/w/src/a.py:3:needle\n/w/src/b.py:1:needle", "names another file"),
    ({"pattern": "needle", "output_mode": "content", "-n": True}, "a.py:3:needle", "working folder"),
    (_grep(**{"-n": False}), "needle one", "no line numbers"),
    (_grep(), "No matches found", "cannot say whether that is one file"),
    (_grep(), "3:" + "x" * 600, "a match line of 600 characters"),
    (_grep(), "3:needle\n[Showing results with pagination = limit: 100]", "cut or paged"),
])
def test_a_result_that_cannot_be_rebuilt_leaves_the_call_a_label(call: dict, record: str, why: str) -> None:
    """The call is Pi's grep exactly, so it is a label; its result is not Pi's text, so nothing after it is."""
    out = convert_trajectory(_traj(dict(call), record), TOOLS)
    assert isinstance(out.record, Rejection) and out.record.reason == Reason.unmappable_result, out.record
    assert why in out.record.detail
    assert out.prefix is not None and out.calls.fates == ["label"]
    (action,) = [m for m in out.prefix.messages if m["role"] == "assistant"]
    fn = action["tool_calls"][0]["function"]
    assert fn["name"] == "grep" and json.loads(fn["arguments"])["pattern"] == "needle"
    assert out.prefix.messages[-1] is action  # no result after it


@pytest.mark.parametrize("name", ["Grep", "Glob", "LS"])
def test_without_the_tools_profile_the_tools_are_unsupported(name: str) -> None:
    rej = to_conversation(_traj({"_name": name, **_grep()}, "3:needle"), DEFAULT)
    assert isinstance(rej, Rejection) and rej.reason == Reason.unsupported_tool
    assert "pi@0.73.1+tools" in rej.detail


@pytest.mark.pi
@pytest.mark.slow
def test_rebuilt_grep_text_is_what_pi_prints(tmp_path: Path) -> None:
    """The record is what rg prints for a one-file search (``rg -n``, as Claude Code runs it); the real Pi with the
    tools profile runs the mapped call, and its result must equal the text harnessfit rebuilt."""
    from harnessfit.harness.pi import install_pi, pi_command, pi_env, run_pi, write_pi_agent_config
    from harnessfit.serve.scripted import Reply, ScriptedEndpoint

    assert shutil.which("rg"), "ripgrep is missing: `make setup` installs it"
    install_pi(TOOLS.version)
    work = tmp_path / "w"
    work.mkdir()
    files = {"few.py": "a = 1\nneedle = 2\n\tNeedle\tTab\ncafé needle\n",
             "many.txt": "".join(f"needle {n}\n" for n in range(1, 131))}
    calls, rebuilt = [], []
    for name, content in files.items():
        (work / name).write_text(content, encoding="utf-8")
        record = subprocess.run(["rg", "-n", "-i", "needle", str(work / name)], capture_output=True, text=True,
                                check=True).stdout.rstrip("\n")
        conv = to_conversation(_traj(_grep(path=str(work / name), **{"-i": True}), record, cwd=str(work)), TOOLS)
        assert isinstance(conv, Conversation), conv
        calls.append(conv.messages[2]["tool_calls"][0]["function"])
        rebuilt.append(conv.messages[3]["content"])
    script = [Reply(tool_calls=[(c["name"], c["arguments"]) for c in calls]), Reply(text="Done.")]
    with ScriptedEndpoint(script, model_id="m") as ep:
        write_pi_agent_config(tmp_path / "h" / ".pi" / "agent", ep.base_url, "m")
        run = run_pi(pi_command(TOOLS.version, "m", "Search.", tools=TOOLS.default_tools), cwd=work,
                     env=pi_env(tmp_path / "h"))
    assert run.stop_reason() == "stop", run.stderr[-500:]
    sent = [m["content"] for m in ep.requests[-1]["messages"] if m["role"] == "tool"]
    assert sent == rebuilt, json.dumps([sent, rebuilt])[:2000]
