"""Sizes: results that Pi would cut (2000 lines / 50 KB) or that the source cut are ``unmappable_result``, never
re-worded into a text Pi could not have produced (the call stays an exact label, the context after it does not);
results within the limits render exactly. A result whose output the source agent altered in a documented way
(``formats.base.Altered``) is ``unmappable_result`` at fidelity tier ``byte`` and Pi's text at tier ``content``."""

from __future__ import annotations

import pytest

from harnessfit.convert.policy import ConvertPolicy
from harnessfit.convert.wire import convert_trajectory
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import Altered, Failure, MapContext, PiCall
from harnessfit.formats.claude_code.mapping import ClaudeCodeMapping
from harnessfit.formats.openhands.mapping import OpenHandsMapping
from harnessfit.harness.card import load_card
from harnessfit.harness.pi_results import PI_MAX_BYTES, PI_MAX_LINES, pi_bash_result, pi_read_result

CARD = load_card("pi", "0.73.1")


def _traj(source: str, steps: list[Step] | None = None) -> Trajectory:
    return Trajectory(
        id="t",
        source=source,
        steps=steps or [],
        cwd="/w",
        date="2026-01-01",
        root_request_id="r",
        provenance={"format": source, "file": "f", "sha256": "0"},
    )


def _claude(name: str, args: dict, result: Step) -> object:
    return ClaudeCodeMapping().map_call(
        ToolCall(id="x", name=name, arguments=args), result, MapContext(CARD, _traj("claude_code"), "/w")
    )


def _read_result(content: str, start: int, num: int, total: int) -> Step:
    return Step(
        role="tool",
        tool_call_id="x",
        text="(numbered view)",
        meta={
            "toolUseResult": {"file": {"content": content, "startLine": start, "numLines": num, "totalLines": total}}
        },
    )


def _rejected_for_result(out: object, words: str, tier: str = "byte") -> None:
    """The result cannot be rendered at ``tier``: a bare Failure from the renderer, or the mapped call carrying it
    (an ``Altered``'s failure at that tier)."""
    if isinstance(out, PiCall):
        out = out.result
    if isinstance(out, Altered):
        out = out.failure if tier == "byte" else out.text
    assert isinstance(out, Failure), out
    assert out.reason == Reason.unmappable_result
    assert "result" in out.detail and words in out.detail, out.detail


# -- the shared renderer's limits, at the boundary ------------------------------------------------------------------
def test_bash_limits_at_the_boundary() -> None:
    at_lines = "\n".join("x" for _ in range(PI_MAX_LINES))
    assert pi_bash_result(CARD, at_lines, 0) == at_lines
    _rejected_for_result(pi_bash_result(CARD, at_lines + "\nx", 0), "over Pi's limits")
    at_bytes = "y" * PI_MAX_BYTES
    assert pi_bash_result(CARD, at_bytes, 2) == at_bytes + "\n\nCommand exited with code 2"
    _rejected_for_result(pi_bash_result(CARD, at_bytes + "é", 2), "over Pi's limits")


def test_read_limits_at_the_boundary() -> None:
    at_lines = "\n".join("x" for _ in range(PI_MAX_LINES))
    assert pi_read_result(CARD, at_lines, start=1, total=PI_MAX_LINES, limited=False) == at_lines
    _rejected_for_result(pi_read_result(CARD, at_lines + "\nx", start=1, total=None, limited=True), "over Pi's limits")


# -- Claude Read ----------------------------------------------------------------------------------------------------
def test_claude_read_stopped_by_claudes_own_cap_is_rejected() -> None:
    content = "\n".join(f"line {i}" for i in range(1, 2001))
    out = _claude("Read", {"file_path": "/w/big.py"}, _read_result(content, 1, 2000, 2500))
    _rejected_for_result(out, "lines 1-2000 of 2500")


def test_claude_read_without_metadata_at_claudes_cap_is_rejected() -> None:
    text = "\n".join(f"{i:>6}\u2192line {i}" for i in range(1, 2001))
    out = _claude("Read", {"file_path": "/w/big.py"}, Step(role="tool", tool_call_id="x", text=text))
    _rejected_for_result(out, "2000-line cap")


def test_claude_read_over_50_kb_is_rejected() -> None:
    content = "\n".join("z" * 1500 for _ in range(40))  # 40 lines, ~60 KB
    out = _claude("Read", {"file_path": "/w/data.txt"}, _read_result(content, 1, 40, 40))
    _rejected_for_result(out, "over Pi's limits")


def test_claude_read_with_a_line_claude_cut_is_rejected() -> None:
    content = "short\n" + "q" * 2000 + "\nend"
    out = _claude("Read", {"file_path": "/w/min.js"}, _read_result(content, 1, 3, 3))
    _rejected_for_result(out, "cuts lines")


def test_claude_read_within_limits_renders_exactly() -> None:
    out = _claude("Read", {"file_path": "/w/a.py", "offset": 3, "limit": 2}, _read_result("c\nd", 3, 2, 10))
    assert isinstance(out, PiCall)
    assert out.result == "c\nd\n\n[6 more lines in file. Use offset=5 to continue.]"


# -- Claude Bash ----------------------------------------------------------------------------------------------------
def test_claude_bash_output_claude_truncated_is_rejected() -> None:
    output = "head\n\n... [812 lines truncated] ...\n\ntail"
    out = _claude("Bash", {"command": "make"}, Step(role="tool", tool_call_id="x", text=output))
    _rejected_for_result(out, "Claude Code truncated")


@pytest.mark.parametrize(
    ("text", "is_error", "says"),
    [
        ("\n".join(f"row {i}" for i in range(2500)), False, "edges Claude Code trimmed"),  # over Pi's limits too
        ("a.py", False, "4 characters of output whose edges Claude Code trimmed"),
        ("Exit code 1\nboom", True, "4 characters of output whose edges Claude Code trimmed"),
        ("(Bash completed with no output)", False, "no output recorded (exit code 0)"),
        ("", False, "no output recorded (exit code 0)"),
        ("Error: Exit code 2", True, "no output recorded (exit code 2)"),
        ("permission denied", True, "an error without an exit code"),
    ],
)
def test_claude_bash_result_is_never_pis_text(text: str, is_error: bool, says: str) -> None:
    """Claude Code trims a command's output (leading blank lines, trailing whitespace), so Pi's text is never known:
    the call is a label, its result is not, and the detail says what the data shows."""
    out = _claude("Bash", {"command": "make"}, Step(role="tool", tool_call_id="x", text=text, is_error=is_error))
    _rejected_for_result(out, says)


@pytest.mark.parametrize(
    ("text", "is_error", "pi_text"),
    [
        ("a.py", False, "a.py"),
        ("Exit code 1\nboom", True, "boom\n\nCommand exited with code 1"),
        ("(Bash completed with no output)", False, "(no output)"),
        ("", False, "(no output)"),
        ("Error: Exit code 2", True, "(no output)\n\nCommand exited with code 2"),
    ],
)
def test_claude_bash_result_at_tier_content_is_pis_text_from_the_recorded_output(
    text: str, is_error: bool, pi_text: str
) -> None:
    """At tier content, Pi's bash text is rendered from what Claude Code recorded, and the alterations Claude Code
    makes to every output are named."""
    out = _claude("Bash", {"command": "make"}, Step(role="tool", tool_call_id="x", text=text, is_error=is_error))
    assert isinstance(out, PiCall) and isinstance(out.result, Altered)
    assert out.result.text == pi_text
    assert out.result.alterations == ("claude_code.bash_edges_trimmed", "claude_code.bash_stderr_apart")


@pytest.mark.parametrize(
    ("text", "is_error", "says"),
    [
        ("\n".join(f"row {i}" for i in range(2500)), False, "over Pi's limits"),
        ("head\n\n... [812 lines truncated] ...\n\ntail", False, "Claude Code truncated"),
        ("permission denied", True, "an error without an exit code"),
    ],
)
def test_claude_bash_result_whose_content_is_unknown_stays_unmappable_at_tier_content(
    text: str, is_error: bool, says: str
) -> None:
    out = _claude("Bash", {"command": "make"}, Step(role="tool", tool_call_id="x", text=text, is_error=is_error))
    _rejected_for_result(out, says, tier="content")


# -- other sources ----------------------------------------------------------------------------------------------------
def test_openhands_large_output_is_rejected() -> None:
    text = "\n".join(str(i) for i in range(3000)) + "\n[The command completed with exit code 0.]"
    out = OpenHandsMapping().map_call(
        ToolCall(id="x", name="execute_bash", arguments={"command": "seq 3000"}),
        Step(role="tool", tool_call_id="x", text=text),
        MapContext(CARD, _traj("openhands"), "/w"),
    )
    _rejected_for_result(out, "final newline")
    _rejected_for_result(out, "over Pi's limits", tier="content")


@pytest.mark.parametrize("tier", ["byte", "content"])
def test_whole_trajectory_with_an_unmappable_result_is_rejected_with_the_reason(tier: str) -> None:
    steps = [
        Step(role="user", text="count to 3000"),
        Step(role="assistant", tool_calls=[ToolCall(id="c1", name="Bash", arguments={"command": "seq 3000"})]),
        Step(role="tool", tool_call_id="c1", text="\n".join(str(i) for i in range(1, 3001))),
        Step(role="assistant", text="Done."),
    ]
    out = convert_trajectory(_traj("claude_code", steps), CARD, policy=ConvertPolicy(fidelity=tier))
    assert isinstance(out.record, Rejection) and out.record.reason == Reason.unmappable_result
    assert out.record.detail.startswith(
        {
            "byte": "Bash result: 13892 characters of output whose edges Claude Code trimmed",
            "content": "Bash result: output 3000 lines",
        }[tier]
    )
    # the call is an exact label; its result is not part of the prefix
    assert out.prefix is not None and out.prefix.meta.prefix.labels == 1
    assert [m["role"] for m in out.prefix.messages] == ["system", "user", "assistant"]
    assert out.calls.fates == ["label"] and out.record.labels == 1


def test_openai_chat_result_over_pi_limits_is_rejected() -> None:
    from harnessfit.formats.openai_chat.mapping import OpenAIChatMapping

    ctx = MapContext(CARD, _traj("openai_chat"), "/w")
    call = ToolCall(id="x", name="bash", arguments='{"command":"seq 3000"}')
    big = Step(role="tool", tool_call_id="x", text="\n".join(str(i) for i in range(3000)))
    _rejected_for_result(OpenAIChatMapping().map_call(call, big, ctx), "over Pi's limits")
    small = Step(role="tool", tool_call_id="x", text="1\n2")
    assert OpenAIChatMapping().map_call(call, small, ctx) == PiCall(
        "bash", {"command": "seq 3000"}, "1\n2", ("openai_chat.pi_named_call",)
    )
