"""Codex → Pi mapping: pinned conversions (argv, workdir, exit codes, apply_patch) and rejections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessfit.core.rejection import Reason
from harnessfit.core.trajectory import Step, ToolCall, Trajectory
from harnessfit.formats.base import Failure, MapContext, PiCall
from harnessfit.formats.codex.mapping import CodexMapping, argv_to_command, parse_patch
from harnessfit.formats.codex.reader import CodexReader
from harnessfit.harness.card import load_card

CARD = load_card("pi", "0.73.1")

FIXTURES = Path(__file__).parent / "fixtures"
R2026 = "codex/iampkuhz__feipi-session-browser__rollout-2026-06-19T10-14-27-019edda8-7eca-7710-b78b-6ce7607beaa1.jsonl"
CWD = "/home/dev/proj"


def outcomes(traj: Trajectory) -> dict[str, object]:
    results = {s.tool_call_id: s for s in traj.steps if s.role == "tool"}
    ctx = MapContext(card=CARD, trajectory=traj, cwd=traj.cwd or "/")
    m = CodexMapping()
    return {c.id: m.map_call(c, results.get(c.id), ctx) for s in traj.steps for c in s.tool_calls}


@pytest.fixture(scope="module")
def fixture_outcomes() -> dict[str, object]:
    (traj,) = CodexReader().read(FIXTURES / "codex_patch_rollout.jsonl")
    assert isinstance(traj, Trajectory)
    return outcomes(traj)


def test_nonzero_exit_becomes_pis_exit_code_text(fixture_outcomes: dict[str, object]) -> None:
    out = fixture_outcomes["c1"]
    assert out == PiCall(
        "bash",
        {"command": "python -m pytest -q", "timeout": 60},
        "1 failed\n\n\nCommand exited with code 1",
        ("codex.shell->bash",),
    )


def test_argv_joined_and_other_workdir_becomes_cd(fixture_outcomes: dict[str, object]) -> None:
    out = fixture_outcomes["c5"]
    assert isinstance(out, PiCall)
    assert out.arguments == {"command": "cd sub && ls -la 'my dir'"}
    assert out.result == "(no output)\n\nCommand exited with code 2"
    assert "codex.workdir->cd" in out.transformations
    assert argv_to_command(["bash", "-lc", "echo 'a b' | wc -c"]) == "echo 'a b' | wc -c"


def test_apply_patch_update_maps_to_exact_pi_edit(fixture_outcomes: dict[str, object]) -> None:
    out = fixture_outcomes["c2"]
    assert out == PiCall(
        "edit",
        {
            "path": "src/app.py",
            "edits": [
                {
                    "oldText": "def main():\n    print('hi')\n    return 0",
                    "newText": "def main():\n    print('hello')\n    return 0",
                }
            ],
        },
        "Successfully replaced 1 block(s) in src/app.py.",
        ("codex.apply_patch.update->edit",),
    )


def test_apply_patch_add_maps_to_write(fixture_outcomes: dict[str, object]) -> None:
    out = fixture_outcomes["c3"]
    assert isinstance(out, PiCall) and out.name == "write"
    assert out.arguments == {"path": "notes/todo.md", "content": "# Todo\n- ship it\n"}
    assert out.result == "Successfully wrote 17 bytes to notes/todo.md"


def test_update_plan_is_ui_only_and_dropped_by_the_converter() -> None:
    from harnessfit.convert import ConvertPolicy, convert_trajectory

    (traj,) = CodexReader().read(FIXTURES / "codex_patch_rollout.jsonl")
    assert isinstance(traj, Trajectory) and any(c.name == "update_plan" for s in traj.steps for c in s.tool_calls)
    assert "update_plan" in ConvertPolicy().ui_tools_for("codex")
    out = convert_trajectory(traj, CARD)
    assert any(f == "drop:ui_only:update_plan" for f in out.calls.fates), out.calls.fates
    off = convert_trajectory(traj, CARD, policy=ConvertPolicy(drop_ui_tools=False))
    assert "ui_only_call" in off.calls.fates


def _call(name: str, args: object, output: str | None) -> object:
    traj = Trajectory(
        id="t",
        source="codex",
        steps=[],
        cwd=CWD,
        root_request_id="r",
        provenance={"format": "codex", "file": "f", "sha256": "0"},
    )
    result = None if output is None else Step(role="tool", tool_call_id="x", text=output)
    return CodexMapping().map_call(ToolCall(id="x", name=name, arguments=args), result, MapContext(CARD, traj, CWD))


@pytest.mark.parametrize(
    "patch, why",
    [
        ("*** Begin Patch\n*** Delete File: a.py\n*** End Patch", "Delete File"),
        ("*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n*** End Patch", "Move to"),
        ("*** Begin Patch\n*** Add File: a.py\n+x\n*** Add File: b.py\n+y\n*** End Patch", "2 files"),
        ("*** Begin Patch\n*** Update File: a.py\n@@\n+only added\n*** End Patch", "ambiguous"),
        ("*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n@@\n x\n-x\n+z\n*** End Patch", "overlap"),
        ("not a patch", "malformed"),
    ],
)
def test_patches_that_do_not_map_exactly_are_rejected(patch: str, why: str) -> None:
    ok = json.dumps({"output": "Success. Updated the following files:\nM a.py\n", "metadata": {"exit_code": 0}})
    out = _call("shell", json.dumps({"command": ["apply_patch", patch]}), ok)
    assert isinstance(out, Failure) and out.reason == Reason.unmappable_arguments
    assert why in out.detail


def _result_failure(out: object) -> Failure:
    """The call maps (it is a label), its result does not render."""
    assert isinstance(out, PiCall), out
    assert isinstance(out.result, Failure) and out.result.reason == Reason.unmappable_result, out.result
    return out.result


def test_failed_patch_is_a_label_whose_result_does_not_render() -> None:
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch"
    bad = json.dumps({"output": "error: Failed to find expected lines", "metadata": {"exit_code": 1}})
    out = _call("shell", json.dumps({"command": ["apply_patch", patch]}), bad)
    assert "exit code 1" in _result_failure(out).detail
    assert out.name == "edit" and out.arguments == {"path": "a.py", "edits": [{"oldText": "x", "newText": "y"}]}


def test_exec_command_2026_output_and_dropped_knobs() -> None:
    text = (
        "Chunk ID: ab12\nWall time: 0.1 seconds\nProcess exited with code 3\nOriginal token count: 2\nOutput:\nboom\n"
    )
    out = _call("exec_command", json.dumps({"cmd": "make test", "workdir": CWD, "yield_time_ms": 1000}), text)
    assert out == PiCall(
        "bash",
        {"command": "make test"},
        "boom\n\n\nCommand exited with code 3",
        ("codex.exec_command->bash", "codex.exec_command.drop:yield_time_ms"),
    )
    running = "Chunk ID: x\nWall time: 10 seconds\nProcess running with session ID 7\nOutput:\n..."
    out = _call("exec_command", json.dumps({"cmd": "npm run dev"}), running)
    assert "still running" in _result_failure(out).detail


def test_outputs_pi_would_truncate_or_codex_truncated_are_rejected() -> None:
    long = json.dumps({"output": "x\n" * 2500, "metadata": {"exit_code": 0}})
    out = _call("shell", json.dumps({"command": ["seq", "2500"]}), long)
    assert "over Pi's limits" in _result_failure(out).detail
    cut = json.dumps({"output": "a\n[... omitted 10 of 300 lines ...]\nb", "metadata": {"exit_code": 0}})
    out = _call("shell", json.dumps({"command": ["cat", "f"]}), cut)
    assert "Codex truncated the output" in _result_failure(out).detail
    refused = _call("shell", json.dumps({"command": ["rm", "-rf", "x"]}), "exec command rejected by user")
    assert isinstance(refused, Failure) and refused.reason == Reason.user_rejected_call  # no label
    plain = _call("shell", json.dumps({"command": ["rm", "-rf", "x"]}), "sandbox: permission denied")
    assert "no exit status" in _result_failure(plain).detail


def test_real_2026_rollout_outcomes(traces_dir: Path) -> None:
    (traj,) = CodexReader().read(traces_dir / R2026)
    outs = list(outcomes(traj).values())
    reasons = [o.reason for o in outs if isinstance(o, Failure)]
    assert reasons.count(Reason.subagent) == 6  # spawn x2, wait x2, close x2
    assert reasons.count(Reason.unsupported_tool) == 1  # tool_search
    bashes = [o for o in outs if isinstance(o, PiCall)]
    assert len(bashes) == 2 and all(o.name == "bash" and not o.result.startswith("Chunk ID") for o in bashes)


def test_parse_patch_keeps_blank_context_lines() -> None:
    p = parse_patch("*** Begin Patch\n*** Update File: a.py\n@@ def f\n a\n\n-b\n+c\n*** End Patch")
    assert p.files[0].hunks == [("a\n\nb", "a\n\nc")]


_DENIED = (
    "failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error, exit code: {code}, "
    "stdout: {out}, stderr: {err}"
)


@pytest.mark.parametrize(
    "command, text, pi_text",
    [
        # `rg` without a match: exit 1 and no output (codex-rs files any non-zero exit in its sandbox as "denied")
        (
            ["rg", "-n", "nomatch", "src"],
            _DENIED.format(code=1, out="", err=""),
            "(no output)\n\nCommand exited with code 1",
        ),
        (
            ["bash", "-lc", "if then"],
            _DENIED.format(
                code=2,
                out="",
                err="bash: -c: line 1: syntax error near unexpected token `then'\nbash: -c: line 1: `if then'\n",
            ),
            "bash: -c: line 1: syntax error near unexpected token `then'\nbash: -c: line 1: `if then'\n\n\n"
            "Command exited with code 2",
        ),
        (
            ["bash", "-lc", "grep -c x f"],
            "execution error: sandbox error: sandbox denied exec error, exit code: 1, stdout: 0\n, stderr: ",
            "0\n\n\nCommand exited with code 1",
        ),
    ],
)
def test_a_failed_command_codex_filed_as_sandbox_denied_is_a_result(
    command: list[str], text: str, pi_text: str
) -> None:
    """codex-rs (before it told a real denial from a failure) returned every non-zero exit in its sandbox as
    ``failed in sandbox … with execution error: sandbox denied exec error, exit code: N, stdout: …, stderr: …``: the
    exit code and the output are there, so the result is Pi's bash text for them, not a refusal."""
    out = _call("shell", json.dumps({"command": command}), text)
    assert isinstance(out, PiCall) and out.result == pi_text, out
    assert "codex.sandbox_denied_output" in out.transformations


def test_a_sandbox_denied_text_whose_output_is_not_known_exactly_stays_unmappable() -> None:
    both = _DENIED.format(code=1, out="partial\n", err="warning\n")
    assert "interleaving" in _result_failure(_call("shell", json.dumps({"command": ["make"]}), both)).detail
    split = _DENIED.format(code=1, out="a, stderr: b", err="c")
    assert "ambiguous" in _result_failure(_call("shell", json.dumps({"command": ["make"]}), split)).detail
    capped = _DENIED.format(code=1, out="", err="e\n" * 256)
    assert "cap" in _result_failure(_call("shell", json.dumps({"command": ["make"]}), capped)).detail
    timeout = "failed in sandbox LinuxSeccomp with execution error: command timed out"
    assert "no exit status" in _result_failure(_call("shell", json.dumps({"command": ["sleep", "9"]}), timeout)).detail
