"""OpenHands → Pi mapping: create → write with Pi's text, empty terminal output exact, non-empty output rejected."""

from __future__ import annotations

import json
from pathlib import Path

from harnessfit.core.rejection import Reason
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import Failure, MapContext, PiCall
from harnessfit.formats.openhands.mapping import OpenHandsMapping, split_openhands_output
from harnessfit.formats.openhands.reader import OpenHandsReader
from harnessfit.harness.card import load_card

CARD = load_card("pi", "0.73.1")

V0 = "openhands/All-Hands-AI__OpenHands__basic.json"
V1 = "openhands/OpenHands__software-agent-sdk__v1_conversation_cd94562403b9487ebdd4018e3f531dfd"


def outcomes(traj: Trajectory) -> list[object]:
    results = {s.tool_call_id: s for s in traj.steps if s.role == "tool"}
    ctx = MapContext(card=CARD, trajectory=traj, cwd=traj.cwd or "/")
    return [OpenHandsMapping().map_call(c, results.get(c.id), ctx) for s in traj.steps for c in s.tool_calls]


def test_v0_create_becomes_write_with_pis_text(traces_dir: Path) -> None:
    (traj,) = OpenHandsReader().read(traces_dir / V0)
    (out,) = outcomes(traj)
    content = json.loads(traj.steps[1].tool_calls[0].arguments)["file_text"]
    assert out == PiCall("write", {"path": "/workspace/game_2048.py", "content": content},
                         f"Successfully wrote {len(content)} bytes to /workspace/game_2048.py",
                         ("openhands.str_replace_editor.create->write",))


def test_v1_terminal_empty_output(traces_dir: Path) -> None:
    (traj,) = OpenHandsReader().read(traces_dir / V1)
    (out,) = outcomes(traj)
    assert out == PiCall("bash", {"command": "pwd > tool_output.txt"}, "(no output)",
                         ("openhands.terminal->bash", "openhands.drop_arg:security_risk", "openhands.drop_arg:summary"))


def _map(name: str, args: dict, result: Step | None) -> object:
    traj = Trajectory(id="t", source="openhands", steps=[], cwd="/w", root_request_id="r",
                      provenance={"format": "openhands", "file": "f", "sha256": "0"})
    return OpenHandsMapping().map_call(ToolCall(id="x", name=name, arguments=args), result, MapContext(CARD, traj, "/w"))


def test_terminal_results() -> None:
    text = "Hello\n[The command completed with exit code 0.]\n[Current working directory: /w]"
    assert split_openhands_output(text) == ("Hello", 0)
    out = _map("execute_bash", {"command": "python hi.py"}, Step(role="tool", tool_call_id="x", text=text))
    assert isinstance(out, PiCall) and out.arguments == {"command": "python hi.py"}  # the call is a label
    assert isinstance(out.result, Failure) and "final newline" in out.result.detail
    failed = _map("execute_bash", {"command": "false"},
                  Step(role="tool", tool_call_id="x", text="\n[The command completed with exit code 1.]"))
    assert isinstance(failed, PiCall) and failed.result == "(no output)\n\nCommand exited with code 1"
    typed = _map("execute_bash", {"command": "y", "is_input": "true"}, None)
    assert isinstance(typed, Failure) and "keystrokes" in typed.detail


def test_other_tools() -> None:
    browse = _map("browser", {"code": "goto('x')"}, None)
    assert isinstance(browse, Failure) and browse.reason == Reason.unsupported_tool
    err = _map("str_replace_editor", {"command": "create", "path": "/w/a", "file_text": "x"},
               Step(role="tool", tool_call_id="x", text="Ran into [Errno 2] No such file", meta={"observation": "error"}))
    assert isinstance(err, PiCall) and err.name == "write"
    assert isinstance(err.result, Failure) and err.result.reason == Reason.unmappable_result
