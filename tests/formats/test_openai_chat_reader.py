"""OpenAI chat / ShareGPT reader: message lists, conversation lists, JSONL, declared-but-foreign tools."""

from __future__ import annotations

import json
from pathlib import Path

from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.openai_chat.reader import OpenAIChatReader
from harnessfit.formats.registry import detect_format

FIXTURES = Path(__file__).parent / "fixtures"
FNCALL = "openai_chat/OpenHands__software-agent-sdk__fncall-llm-message.json"
GLAIVE = "openai_chat/hiyouga__LLaMA-Factory__glaive_toolcall_en_demo.json"


def test_single_message_list(traces_dir: Path) -> None:
    path = traces_dir / FNCALL
    assert detect_format(path) == "openai_chat"
    (traj,) = list(OpenAIChatReader().read(path))
    assert isinstance(traj, Trajectory)
    assert [s.role for s in traj.steps][:4] == ["system", "user", "assistant", "tool"]
    calls = [c for s in traj.steps for c in s.tool_calls]
    assert [c.name for c in calls] == [
        "str_replace_editor",
        "terminal",
        "str_replace_editor",
        "str_replace_editor",
        "terminal",
        "finish",
    ]
    assert all(isinstance(c.arguments, str) for c in calls)


def test_sharegpt_glaive_counts(traces_dir: Path) -> None:
    path = traces_dir / GLAIVE
    assert detect_format(path) == "openai_chat"
    out = list(OpenAIChatReader().read(path))
    assert len(out) == 300
    rej = [r for r in out if isinstance(r, Rejection)]
    trajs = [t for t in out if isinstance(t, Trajectory)]
    # 38 declare tools but never call one: rejected here; 153 call a tool (mapping rejects); 109 declare none
    assert len(rej) == 38 and {r.reason for r in rej} == {Reason.unsupported_tool}
    assert all("declares tools Pi lacks" in r.detail for r in rej)
    with_calls = [t for t in trajs if any(s.tool_calls for s in t.steps)]
    assert len(with_calls) == 153 and len(trajs) - len(with_calls) == 109
    call = next(c for s in with_calls[0].steps for c in s.tool_calls)
    assert call.name == "search_recipes" and call.arguments == {"ingredients": ["chicken", "bell peppers", "rice"]}
    step_after = with_calls[0].steps[
        with_calls[0].steps.index(next(s for s in with_calls[0].steps if s.tool_calls)) + 1
    ]
    assert step_after.role == "tool" and step_after.tool_call_id == call.id
    assert len({t.id for t in trajs} | {r.record_id for r in rej}) == 300


def test_jsonl_keeps_argument_forms() -> None:
    path = FIXTURES / "openai_chat_pi_tools.jsonl"
    assert detect_format(path) == "openai_chat"
    trajs = list(OpenAIChatReader().read(path))
    assert [t.provenance.line_start for t in trajs] == [1, 2, 3]
    args = [t.steps[1].tool_calls[0].arguments for t in trajs]
    assert isinstance(args[0], str) and args[1] == {"path": "README.md"}
    assert json.loads(json.loads(args[2])) == {"path": "README.md"}  # string of a string, untouched


def test_bad_inputs(tmp_path: Path) -> None:
    broken = tmp_path / "c.jsonl"
    broken.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n{"messages": [')
    out = list(OpenAIChatReader().read(broken))
    assert isinstance(out[0], Trajectory)
    assert isinstance(out[1], Rejection) and out[1].reason == Reason.truncated_file
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps([{"conversations": [{"from": "alien", "value": "x"}], "tools": "[]"}]))
    (r,) = list(OpenAIChatReader().read(odd))
    assert isinstance(r, Rejection) and r.reason == Reason.parse_error and "alien" in r.detail


def test_each_real_file_claimed_by_exactly_one_of_these_readers(traces_dir: Path) -> None:
    from harnessfit.formats.codex.reader import CodexReader
    from harnessfit.formats.openhands.reader import OpenHandsReader
    from harnessfit.formats.swe_agent.reader import SweAgentReader

    readers = [CodexReader(), SweAgentReader(), OpenHandsReader(), OpenAIChatReader()]
    for d in ("codex", "swe_agent", "openhands", "openai_chat"):
        for p in sorted((traces_dir / d).iterdir()):
            assert [r.name for r in readers if r.detect(p)] == [d], p.name
    for d in ("pi", "claude_code"):
        for p in sorted((traces_dir / d).iterdir()):
            assert not any(r.detect(p) for r in readers), p.name
