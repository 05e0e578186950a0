"""OpenHands → Pi mapping: create → write with Pi's text; a terminal call is a label but its result never Pi's text
(OpenHands strips whitespace), in every V1 observation layout, and each lost result names what the data shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers.openhands_v1 import BENCHMARKS, LAYOUTS, terminal_observation
from harnessfit.convert import iter_convert
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import Altered, Failure, MapContext, PiCall
from harnessfit.formats.openhands.events import v1_observation
from harnessfit.formats.openhands.mapping import OUTPUT_STRIPPED, OpenHandsMapping, split_openhands_output
from harnessfit.formats.openhands.reader import OpenHandsReader
from harnessfit.harness.card import load_card
from harnessfit.harness.pi_results import pi_bash_result

CARD = load_card("pi", "0.73.1")


def _byte(result: object) -> object:
    """What a result is at fidelity tier byte: an ``Altered``'s failure (OpenHands strips every output)."""
    return result.failure if isinstance(result, Altered) else result


def _content(result: object) -> str:
    """Pi's text at fidelity tier content, from the stripped output, with the alteration named."""
    assert isinstance(result, Altered) and result.alterations == (OUTPUT_STRIPPED,), result
    assert isinstance(result.text, str)
    return result.text


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
    assert out == PiCall(
        "write",
        {"path": "/workspace/game_2048.py", "content": content},
        f"Successfully wrote {len(content)} bytes to /workspace/game_2048.py",
        ("openhands.str_replace_editor.create->write",),
    )


def test_v1_terminal_empty_output(traces_dir: Path) -> None:
    """The call is a label; its empty output is not byte-exactly Pi's "(no output)": OpenHands strips whitespace, so
    it may have been blank lines. At tier content it is Pi's "(no output)", the stripping named."""
    (traj,) = OpenHandsReader().read(traces_dir / V1)
    (out,) = outcomes(traj)
    assert isinstance(out, PiCall) and out.name == "bash" and out.arguments == {"command": "pwd > tool_output.txt"}
    assert out.transformations == (
        "openhands.terminal->bash",
        "openhands.drop_arg:security_risk",
        "openhands.drop_arg:summary",
    )
    byte = _byte(out.result)
    assert isinstance(byte, Failure) and byte.reason == Reason.unmappable_result
    assert "printed nothing or only blank lines (exit code 0)" in byte.detail
    assert _content(out.result) == "(no output)"


def _map(name: str, args: dict, result: Step | None) -> object:
    traj = Trajectory(
        id="t",
        source="openhands",
        steps=[],
        cwd="/w",
        root_request_id="r",
        provenance={"format": "openhands", "file": "f", "sha256": "0"},
    )
    return OpenHandsMapping().map_call(
        ToolCall(id="x", name=name, arguments=args), result, MapContext(CARD, traj, "/w")
    )


def test_terminal_results() -> None:
    text = "Hello\n[The command completed with exit code 0.]\n[Current working directory: /w]"
    assert split_openhands_output(text) == ("Hello", 0)
    out = _map("execute_bash", {"command": "python hi.py"}, Step(role="tool", tool_call_id="x", text=text))
    assert isinstance(out, PiCall) and out.arguments == {"command": "python hi.py"}  # the call is a label
    assert isinstance(_byte(out.result), Failure) and "final newline" in _byte(out.result).detail
    assert _content(out.result) == "Hello"
    failed = _map(
        "execute_bash",
        {"command": "false"},
        Step(role="tool", tool_call_id="x", text="\n[The command completed with exit code 1.]"),
    )
    assert isinstance(failed, PiCall) and isinstance(_byte(failed.result), Failure)
    assert "printed nothing or only blank lines (exit code 1)" in _byte(failed.result).detail
    assert _content(failed.result) == "(no output)\n\nCommand exited with code 1"
    typed = _map("execute_bash", {"command": "y", "is_input": "true"}, None)
    assert isinstance(typed, Failure) and "keystrokes" in typed.detail


def test_other_tools() -> None:
    browse = _map("browser", {"code": "goto('x')"}, None)
    assert isinstance(browse, Failure) and browse.reason == Reason.unsupported_tool
    err = _map(
        "str_replace_editor",
        {"command": "create", "path": "/w/a", "file_text": "x"},
        Step(role="tool", tool_call_id="x", text="Ran into [Errno 2] No such file", meta={"observation": "error"}),
    )
    assert isinstance(err, PiCall) and err.name == "write"
    assert isinstance(err.result, Failure) and err.result.reason == Reason.unmappable_result


# ------------------------------------------------------------------------------------ V1 observation layouts
def _v1_step(obs: dict, **meta: object) -> Step:
    """The tool step the reader makes of a V1 observation (``events.v1_observation``)."""
    text, is_error, code, got = v1_observation(obs)
    return Step(
        role="tool",
        tool_call_id="x",
        text=text,
        is_error=is_error,
        exit_code=code,
        meta={"observation": obs.get("kind"), **got, **meta},
    )


@settings(max_examples=300, deadline=None)
@given(layout=st.sampled_from(LAYOUTS), output=st.text(max_size=30), code=st.integers(-1, 255), error=st.booleans())
def test_v1_bash_result_is_never_guessed(layout: str, output: str, code: int, error: bool) -> None:
    """Property: in every layout the call is a label and its result is never rendered byte-exactly as Pi's (OpenHands
    keeps no raw output); the detail names the reason the data shows. At tier content, where the reason is only the
    stripping, it is Pi's text from the recorded output."""
    out = _map("terminal", {"command": "make"}, _v1_step(terminal_observation(layout, output, code, error)))
    assert isinstance(out, PiCall) and out.arguments == {"command": "make"}
    byte = _byte(out.result)
    assert isinstance(byte, Failure) and byte.reason == Reason.unmappable_result
    detail = byte.detail
    assert isinstance(out.result, Altered) == (not error and code != -1 and "\x1b" not in output)
    if isinstance(out.result, Altered):
        assert _content(out.result) == pi_bash_result(CARD, split_openhands_output(output)[0], code)
    assert "no exit status" not in detail
    if error:
        assert "an OpenHands error observation" in detail
    elif code == -1:
        assert detail.startswith("terminal result: exit code -1")
        assert "OpenHands said '[The command has no new output" in detail
    elif "\x1b" in output:
        assert "terminal control sequences" in detail
    elif output == "":
        assert f"printed nothing or only blank lines (exit code {code})" in detail
    else:
        assert f"{len(output)} characters of output" in detail


@pytest.mark.parametrize("layout", LAYOUTS)
def test_v1_output_is_never_an_empty_result(layout: str) -> None:
    """Reading only ``content`` left the older layout's text empty: with an exit code found, that would have been
    Pi's "(no output)" for a command that printed something."""
    out = _map("execute_bash", {"command": "echo hi"}, _v1_step(terminal_observation(layout, "hi", 0)))
    assert isinstance(out, PiCall) and isinstance(_byte(out.result), Failure)
    assert _byte(out.result).detail == (
        "execute_bash result: 2 characters of output whose final newline OpenHands "
        "stripped, so Pi's exact text is unknown"
    )
    assert _content(out.result) == "hi"
    ws = _map("execute_bash", {"command": "echo"}, _v1_step(terminal_observation(layout, "\n", 0)))
    # whitespace is output, not "(no output)"
    assert isinstance(ws, PiCall) and isinstance(_byte(ws.result), Failure) and _content(ws.result) != "(no output)"


def test_v1_escape_codes_are_not_no_output() -> None:
    """An interactive terminal's bracketed-paste switches around an empty output are no "(no output)"."""
    out = _map(
        "execute_bash", {"command": "true"}, _v1_step(terminal_observation("output", "\x1b[?2004l\x1b[?2004h", 0))
    )
    assert isinstance(out, PiCall) and isinstance(out.result, Failure)
    assert "terminal control sequences ('\\x1b[?2004l'…)" in out.result.detail


def test_v1_missing_text_and_exit_code_are_named() -> None:
    no_text = _map("terminal", {"command": "true"}, _v1_step({"kind": "TerminalObservation", "exit_code": 0}))
    assert isinstance(no_text, PiCall) and isinstance(no_text.result, Failure)
    assert no_text.result.detail == (
        "terminal result: TerminalObservation has no content, output, message or error "
        "text, so the text OpenHands showed is unknown"
    )
    no_code = _map(
        "terminal",
        {"command": "true"},
        _v1_step({"kind": "TerminalObservation", "content": [], "is_error": False, "exit_code": None}),
    )
    assert isinstance(no_code, PiCall) and isinstance(no_code.result, Failure)
    assert "(exit_code null, no metadata;" in no_code.result.detail


def test_v1_editor_error_message_layout() -> None:
    """The older editor layout's ``error`` message is the result: a create that failed is no "Successfully wrote"."""
    args = {"command": "create", "path": "/w/b.py", "file_text": "x"}
    failed = {
        "kind": "FileEditorObservation",
        "command": "create",
        "output": "",
        "path": "/w/b.py",
        "error": "Ran into [Errno 13] Permission denied: '/w/b.py'",
    }
    out = _map("str_replace_editor", args, _v1_step(failed))
    assert isinstance(out, PiCall) and out.name == "write" and isinstance(out.result, Failure)
    ok = {**failed, "error": None, "output": "File created successfully at: /w/b.py"}
    good = _map("str_replace_editor", args, _v1_step(ok))
    assert isinstance(good, PiCall) and good.result == "Successfully wrote 1 bytes to /w/b.py"


def test_v1_extended_content_is_no_exact_result() -> None:
    step = _v1_step(terminal_observation("content+code", "", 0), extended_content="Rule: run the linter.")
    out = _map("terminal", {"command": "true"}, step)
    assert isinstance(out, PiCall) and isinstance(out.result, Failure)
    assert "OpenHands appended 21 characters of agent context" in out.result.detail


def test_v1_real_output_layout_ledger(traces_dir: Path) -> None:
    """The real evaluation output: its bash results are lost for what they hold, never for a missing exit status."""
    rows = list(iter_convert([traces_dir.parent / "traces-extra" / BENCHMARKS], CARD, install_dir="/opt/pi"))
    assert rows and all(isinstance(r, Rejection) for r in rows)
    for row in rows:
        assert row.reason == Reason.unmappable_result and "no exit status" not in row.detail
        assert "terminal control sequences ('\\x1b[?2004l'…)" in row.detail
