"""Codex → Pi mapping across Codex's tool generations and output shapes (``shell`` / ``container.exec`` /
``local_shell`` with the JSON envelope, ``shell_command`` with the freeform ``Exit code:`` text, ``exec_command`` with
the unified-exec text, ``apply_patch`` in each spelling), what Codex's cuts and timeouts do, and refusals."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessfit.core.rejection import Reason
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import Failure, MapContext, PiCall
from harnessfit.formats.codex.mapping import CodexMapping
from harnessfit.harness.card import load_card
from harnessfit.harness.pi_results import pi_bash_result

CARD = load_card("pi", "0.73.1")
CWD = "/home/dev/proj"
PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch"
OK_PATCH = "Success. Updated the following files:\nM a.py\n"


def call(name: str, args: object, output: str | None, images: int = 0, **meta: object) -> object:
    traj = Trajectory(
        id="t",
        source="codex",
        steps=[],
        cwd=CWD,
        root_request_id="r",
        provenance={"format": "codex", "file": "f", "sha256": "0"},
    )
    result = None if output is None else Step(role="tool", tool_call_id="x", text=output, meta=meta, images=images)
    return CodexMapping().map_call(ToolCall(id="x", name=name, arguments=args), result, MapContext(CARD, traj, CWD))


def envelope(output: str, code: int) -> str:
    return json.dumps({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.2}})


def freeform(output: str, code: int) -> str:
    return "\n".join([f"Exit code: {code}", "Wall time: 0.2 seconds", "Output:", output])


def unified(output: str, code: int) -> str:
    return (
        f"Chunk ID: 3f2a\nWall time: 0.2150 seconds\nProcess exited with code {code}\nOriginal token count: 9\n"
        f"Output:\n{output}"
    )


SHAPES = {"envelope": envelope, "freeform": freeform, "unified": unified}
TOOLS = {  # one command, as each tool generation spells it
    "shell": json.dumps({"command": ["bash", "-lc", "make test"]}),
    "container.exec": json.dumps({"command": ["bash", "-lc", "make test"]}),
    "shell_command": json.dumps({"command": "make test"}),
    "exec_command": json.dumps({"cmd": "make test"}),
}


def result_failure(out: object) -> Failure:
    assert isinstance(out, PiCall), out
    assert isinstance(out.result, Failure) and out.result.reason == Reason.unmappable_result, out.result
    return out.result


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60).filter(
    lambda t: "truncated" not in t and "omitted" not in t and not t.startswith(("Total output", "Warning", "command"))
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    tool=st.sampled_from(sorted(TOOLS)), shape=st.sampled_from(sorted(SHAPES)), output=_TEXT, code=st.integers(-1, 255)
)
def test_every_tool_and_output_shape_gives_pis_bash_text(tool: str, shape: str, output: str, code: int) -> None:
    out = call(tool, TOOLS[tool], SHAPES[shape](output, code))
    assert isinstance(out, PiCall) and out.name == "bash" and out.arguments == {"command": "make test"}
    assert out.result == pi_bash_result(CARD, output, code)


def test_local_shell_action_maps_like_shell() -> None:
    action = {
        "type": "exec",
        "command": ["ls", "-la"],
        "timeout_ms": 5000,
        "working_directory": "sub",
        "env": {"A": "1"},
        "user": None,
    }
    out = call("local_shell", action, envelope("x\n", 0))
    assert out == PiCall(
        "bash",
        {"command": "cd sub && ls -la", "timeout": 5},
        "x\n",
        ("codex.local_shell->bash", "codex.workdir->cd", "codex.local_shell.drop:env", "codex.local_shell.drop:user"),
    )


def test_timeout_alias_and_dropped_knobs_are_recorded() -> None:
    out = call(
        "shell",
        json.dumps(
            {
                "command": ["ls"],
                "timeout": 1500,
                "sandbox_permissions": "require_escalated",
                "justification": "needs network",
            }
        ),
        envelope("", 0),
    )
    assert out == PiCall(
        "bash",
        {"command": "ls", "timeout": 1.5},
        "(no output)",
        ("codex.shell->bash", "codex.shell.drop:justification", "codex.shell.drop:sandbox_permissions"),
    )
    both = call("shell_command", json.dumps({"command": "ls", "timeout": 1000, "timeout_ms": 1000}), envelope("", 0))
    assert isinstance(both, Failure) and both.reason == Reason.unmappable_arguments and "alias" in both.detail
    login = call("shell_command", json.dumps({"command": "ls", "login": False, "workdir": CWD}), freeform("a\n", 0))
    assert isinstance(login, PiCall) and login.transformations == (
        "codex.shell_command->bash",
        "codex.shell_command.drop:login",
    )


@pytest.mark.parametrize(
    "body",
    [
        "a\n[... omitted 10 of 300 lines ...]\n\nb",
        "Total output lines: 300\n\na\nb",
        "a\n[... output truncated to fit 10240 bytes ...]\n\nb",
        "head…1200 tokens truncated…tail",
        "head…840 chars truncated…tail",
        "Warning: truncated output (original token count: 9000)\nTotal output lines: 3\n\nx",
        "partial\n\n[Output truncated: too many lines or bytes]",
    ],
)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_outputs_codex_cut_do_not_render(body: str, shape: str) -> None:
    assert "Codex truncated the output" in result_failure(call("shell", TOOLS["shell"], SHAPES[shape](body, 0))).detail


@pytest.mark.parametrize(
    "header", ["Total output lines: 420", "Warning: truncated output (original token count: 9000)"]
)
def test_a_header_saying_codex_cut_the_output_does_not_render(header: str) -> None:
    text = f"Exit code: 0\nWall time: 1 seconds\n{header}\nOutput:\nshort now"
    detail = result_failure(call("shell_command", TOOLS["shell_command"], text)).detail
    assert "Codex truncated the output" in detail and header in detail


def test_timeouts_running_processes_and_unknown_headers_do_not_render() -> None:
    timed = envelope("command timed out after 10000 milliseconds\npartial", 124)
    assert "command timed out after 10000 milliseconds" in result_failure(call("shell", TOOLS["shell"], timed)).detail
    running = "Chunk ID: 1\nWall time: 10.0 seconds\nProcess running with session ID 4\nOutput:\nserving"
    assert "still running" in result_failure(call("exec_command", TOOLS["exec_command"], running)).detail
    odd = "Exit code: 0\nSandbox: denied\nOutput:\nx"
    assert "no exit status" in result_failure(call("shell_command", TOOLS["shell_command"], odd)).detail
    items = call("shell", TOOLS["shell"], json.dumps([{"type": "input_text", "text": "a"}]), output_parts=2, images=1)
    assert "2 content item(s)" in result_failure(items).detail


def test_typescript_cli_outputs_lose_stderr_when_stdout_is_not_empty() -> None:
    out = call("shell", TOOLS["shell"], envelope("hello\n", 0), codex_output="stdout_or_stderr")
    assert "stdout || stderr" in result_failure(out).detail
    empty = call("shell", TOOLS["shell"], envelope("", 0), codex_output="stdout_or_stderr")
    assert isinstance(empty, PiCall) and empty.result == "(no output)"


@pytest.mark.parametrize(
    "name, args",
    [
        ("apply_patch", PATCH),  # the freeform custom tool: the patch itself
        ("apply_patch", json.dumps({"input": PATCH})),  # the function tool
        ("shell", json.dumps({"command": ["apply_patch", PATCH]})),
        ("shell", json.dumps({"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{PATCH}\nEOF\n"]})),
        ("shell_command", json.dumps({"command": f"apply_patch <<'EOF'\n{PATCH}\nEOF"})),
        ("exec_command", json.dumps({"cmd": f"apply_patch <<EOF\n{PATCH}\nEOF"})),
    ],
)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_apply_patch_in_every_spelling_and_output_shape(name: str, args: str, shape: str) -> None:
    out = call(name, args, SHAPES[shape](OK_PATCH, 0))
    assert out == PiCall(
        "edit",
        {"path": "a.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]},
        "Successfully replaced 1 block(s) in a.py.",
        ("codex.apply_patch.update->edit",),
    )


def test_a_heredoc_patch_after_cd_edits_under_that_directory() -> None:
    out = call(
        "exec_command", json.dumps({"cmd": f"cd 'pkg dir' && apply_patch <<'EOF'\n{PATCH}\nEOF"}), unified(OK_PATCH, 0)
    )
    assert isinstance(out, PiCall) and out.arguments["path"] == "pkg dir/a.py"
    assert "codex.apply_patch.workdir->path" in out.transformations


def test_other_apply_patch_invocations_are_refused_but_mentions_are_commands() -> None:
    other = call(
        "shell_command", json.dumps({"command": f"echo go; apply_patch <<'EOF'\n{PATCH}\nEOF"}), freeform(OK_PATCH, 0)
    )
    assert isinstance(other, Failure) and other.reason == Reason.unmappable_arguments and "apply_patch" in other.detail
    grep = call("shell_command", json.dumps({"command": "grep -rn apply_patch src"}), freeform("", 1))
    assert isinstance(grep, PiCall) and grep.name == "bash"


@pytest.mark.parametrize(
    "name, args, said",
    [
        ("shell", json.dumps({"command": ["rm", "-rf", "x"]}), "exec command rejected by user"),
        ("shell", json.dumps({"command": ["apply_patch", PATCH]}), "exec command rejected by user"),
        ("apply_patch", PATCH, "patch rejected by user"),
        ("shell", json.dumps({"command": ["rm", "x"]}), json.dumps({"output": "aborted", "metadata": {}})),
    ],
)
def test_refused_calls_are_no_labels(name: str, args: str, said: str) -> None:
    out = call(name, args, said)
    assert isinstance(out, Failure) and out.reason == Reason.user_rejected_call


def test_tools_pi_lacks_say_why() -> None:
    for name in ("write_stdin", "view_image", "read_file", "grep_files"):
        out = call(name, json.dumps({"session_id": 1, "chars": "q"}), "x")
        assert (
            isinstance(out, Failure)
            and out.reason == Reason.unsupported_tool
            and "Pi has no such tool" not in out.detail
        )
    out = call("image_generation", {"revised_prompt": "a cat"}, None)
    assert isinstance(out, Failure) and out.reason == Reason.unsupported_tool
