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
    steps = [
        Step(role="user", text="look"),
        Step(role="assistant", tool_calls=[ToolCall(id="t1", name=name, arguments=call)]),
        Step(role="tool", tool_call_id="t1", text=result),
        Step(role="assistant", text="found it"),
    ]
    return Trajectory(
        id="t",
        source="claude_code",
        steps=steps,
        cwd=cwd,
        date="2026-01-02",
        root_request_id="r",
        provenance=Provenance(format="claude_code", file="f", sha256="0" * 64),
    )


def _grep(**extra) -> dict:
    return {"pattern": "needle", "path": "/w/src/a.py", "output_mode": "content", "-n": True, **extra}


def test_a_content_search_of_one_file_becomes_pis_grep_text() -> None:
    conv = to_conversation(_traj(_grep(**{"-i": True}), "3:needle one\r\n7:x = needle"), TOOLS)
    assert isinstance(conv, Conversation), conv
    assert conv.messages[2]["tool_calls"][0]["function"] == {
        "name": "grep",
        "arguments": '{"pattern":"needle","path":"/w/src/a.py","ignoreCase":true}',
    }
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
        "[100 matches limit reached. Use limit=200 for more, or refine pattern]"
    )


@pytest.mark.parametrize(
    ("call", "record", "why"),
    [
        (_grep(output_mode="files_with_matches"), "Found 1 file\n/w/src/a.py", "lists files or counts"),
        ({"pattern": "needle", "path": "/w/a.py"}, "Found 1 file\n/w/a.py", "lists files or counts"),
        (_grep(**{"-C": 2}), "3:needle", "context lines"),
        ({"_name": "Glob", "pattern": "**/*.py", "path": "/w"}, "/w/a.py", "also lists folders"),
        ({"_name": "LS", "path": "/w"}, "- /w/\n  - a.py\n", "leaves out hidden entries"),
    ],
)
def test_a_call_pi_cannot_make_is_the_blocker(call: dict, record: str, why: str) -> None:
    out = convert_trajectory(_traj(dict(call), record), TOOLS)
    assert isinstance(out.record, Rejection) and out.record.reason == Reason.unmappable_arguments, out.record
    assert why in out.record.detail
    assert out.prefix is None and out.calls.fates == [Reason.unmappable_arguments.value]


@pytest.mark.parametrize(
    ("call", "record", "why"),
    [
        (_grep(path="/w/src"), "/w/src/a.py:3:needle\n/w/src/b.py:1:needle", "names another file"),
        ({"pattern": "needle", "output_mode": "content", "-n": True}, "a.py:3:needle", "working folder"),
        (_grep(**{"-n": False}), "needle one", "no line numbers"),
        (_grep(), "No matches found", "cannot say whether that is one file"),
        (_grep(), "3:" + "x" * 600, "a match line of 600 characters"),
        (_grep(), "3:needle\n[Showing results with pagination = limit: 100]", "cut or paged"),
    ],
)
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


@pytest.mark.parametrize(
    ("call", "suggests"),
    [
        ({"_name": "Grep", **_grep()}, True),  # maps under the tools profile
        (
            {"_name": "Grep", **_grep(output_mode="files_with_matches")},
            False,
        ),  # a file list: Pi's grep never prints one
        ({"_name": "Glob", "pattern": "**/*.py", "path": "/w"}, False),
        ({"_name": "LS", "path": "/w"}, False),
    ],
)
def test_without_the_tools_profile_the_tools_are_unsupported(call: dict, suggests: bool) -> None:
    """The tools profile is suggested only for a call it unlocks; otherwise the row says why it would not help."""
    rej = to_conversation(_traj(dict(call), "3:needle"), DEFAULT)
    assert isinstance(rej, Rejection) and rej.reason == Reason.unsupported_tool
    text = rej.detail + rej.repair_hint
    assert ("pi@0.73.1+tools" in text) is suggests, text
    if not suggests:
        assert "tools profile would not" in rej.detail


def _search_calls() -> list[tuple[Trajectory, ToolCall, Step | None]]:
    from harnessfit.formats.claude_code.reader import ClaudeCodeReader

    shared = Path(__file__).resolve().parents[2].parent / "shared"
    out = []
    for path in sorted(
        [
            *(shared / "traces" / "claude_code").glob("*.jsonl"),
            *(shared / "traces-extra" / "claude_code").glob("*.jsonl"),
        ]
    ):
        for traj in ClaudeCodeReader().read(path):
            if not isinstance(traj, Trajectory):
                continue
            results = {s.tool_call_id: s for s in traj.steps if s.role == "tool"}
            out += [
                (traj, c, results.get(c.id))
                for s in traj.steps
                for c in s.tool_calls
                if c.name in ("Grep", "Glob", "LS")
            ]
    return out


def test_the_tools_profile_is_suggested_exactly_where_it_unlocks_a_real_call() -> None:
    """Every Grep/Glob/LS call of the shared Claude Code traces: the default card's row names pi@V+tools if and only if
    under that card the call is Pi's (a label)."""
    from harnessfit.formats.base import MapContext, PiCall
    from harnessfit.formats.registry import get_mapping

    default, tools = load_card("pi", "1.6.0"), load_card("pi", "1.6.0", "tools")
    m = get_mapping("claude_code")
    calls = _search_calls()
    assert len(calls) >= 15
    unlocked = 0
    for traj, call, result in calls:
        off = m.map_call(call, result, MapContext(card=default, trajectory=traj, cwd=traj.cwd or "/"))
        on = m.map_call(call, result, MapContext(card=tools, trajectory=traj, cwd=traj.cwd or "/"))
        assert not isinstance(off, PiCall) and off.reason == Reason.unsupported_tool
        unlocked += isinstance(on, PiCall)
        assert ("pi@1.6.0+tools" in off.detail + off.repair_hint) is isinstance(on, PiCall), (call, off, on)
    assert unlocked >= 2  # the content-mode Greps


def test_other_formats_search_tools_suggest_no_card() -> None:
    """No other format's search tool maps to Pi's optional tools, so their hint names no card."""
    from harnessfit.formats.base import unsupported_hint

    for tool in ("find_file", "search_dir", "list_dir", "glob"):
        assert "card" not in unsupported_hint(tool)


@pytest.mark.pi
@pytest.mark.slow
def test_rebuilt_grep_text_is_what_pi_prints(tmp_path: Path) -> None:
    """The record is what rg prints for a one-file search (``rg -n``, as Claude Code runs it); the real Pi with the
    tools profile runs the mapped call, and its result must equal the text harnessfit rebuilt."""
    from harnessfit.harness.pi import install_pi, pi_command, pi_env, run_pi, write_pi_agent_config
    from harnessfit.harness.scripted import Reply, ScriptedEndpoint

    assert shutil.which("rg"), "ripgrep is missing: `make setup` installs it"
    install_pi(TOOLS.version)
    work = tmp_path / "w"
    work.mkdir()
    files = {
        "few.py": "a = 1\nneedle = 2\n\tNeedle\tTab\ncafé needle\n",
        "many.txt": "".join(f"needle {n}\n" for n in range(1, 131)),
    }
    calls, rebuilt = [], []
    for name, content in files.items():
        (work / name).write_text(content, encoding="utf-8")
        record = subprocess.run(
            ["rg", "-n", "-i", "needle", str(work / name)], capture_output=True, text=True, check=True
        ).stdout.rstrip("\n")
        conv = to_conversation(_traj(_grep(path=str(work / name), **{"-i": True}), record, cwd=str(work)), TOOLS)
        assert isinstance(conv, Conversation), conv
        calls.append(conv.messages[2]["tool_calls"][0]["function"])
        rebuilt.append(conv.messages[3]["content"])
    script = [Reply(tool_calls=[(c["name"], c["arguments"]) for c in calls]), Reply(text="Done.")]
    with ScriptedEndpoint(script, model_id="m") as ep:
        write_pi_agent_config(tmp_path / "h" / ".pi" / "agent", ep.base_url, "m")
        run = run_pi(
            pi_command(TOOLS.version, "m", "Search.", tools=TOOLS.default_tools), cwd=work, env=pi_env(tmp_path / "h")
        )
    assert run.stop_reason() == "stop", run.stderr[-500:]
    sent = [m["content"] for m in ep.requests[-1]["messages"] if m["role"] == "tool"]
    assert sent == rebuilt, json.dumps([sent, rebuilt])[:2000]
