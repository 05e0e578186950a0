"""SWE-agent → Pi mapping: str_replace_editor create/str_replace exact, stateful and exit-less commands rejected."""

from __future__ import annotations

from pathlib import Path

from harnessfit.core.rejection import Reason
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.base import Drop, Failure, MapContext, PiCall
from harnessfit.formats.swe_agent.mapping import SweAgentMapping, strip_swe_prompt
from harnessfit.formats.swe_agent.reader import SweAgentReader
from harnessfit.harness.card import load_card

CARD = load_card("pi", "0.73.1")

FIXTURES = Path(__file__).parent / "fixtures"
REAL = "swe_agent/SWE-agent__SWE-agent__marshmallow-code__marshmallow-1867__function_calling_replace.traj"


def outcomes(traj: Trajectory) -> list[object]:
    results = {s.tool_call_id: s for s in traj.steps if s.role == "tool"}
    ctx = MapContext(card=CARD, trajectory=traj, cwd=traj.cwd or "/")
    return [SweAgentMapping().map_call(c, results.get(c.id), ctx) for s in traj.steps for c in s.tool_calls]


def test_editor_fixture_maps_exactly() -> None:
    (traj,) = SweAgentReader().read(FIXTURES / "swe_agent_editor.traj")
    create, replace, submit = outcomes(traj)
    assert create == PiCall(
        "write", {"path": "/repo/test_app.py", "content": "def test():\n    assert True\n"},
        "Successfully wrote 28 bytes to /repo/test_app.py", ("swe_agent.str_replace_editor.create->write",),
    )
    assert replace == PiCall(
        "edit", {"path": "/repo/app.py", "edits": [{"oldText": "print('hi')", "newText": "print('hello')"}]},
        "Successfully replaced 1 block(s) in /repo/app.py.", ("swe_agent.str_replace_editor.str_replace->edit",),
    )
    assert submit == Drop("swe_agent.submit:end-of-episode")


def test_real_trajectory_outcomes(traces_dir: Path) -> None:
    (traj,) = SweAgentReader().read(traces_dir / REAL)
    outs = outcomes(traj)
    first = outs[0]
    assert first == PiCall("write", {"path": "reproduce.py", "content": "\n"},
                           "Successfully wrote 1 bytes to reproduce.py", ("swe_agent.create->write",))
    kinds = [o.reason.value if isinstance(o, Failure) else type(o).__name__ for o in outs]
    assert kinds == [
        "PiCall", "unmappable_arguments", "unmappable_arguments", "unmappable_arguments", "unsupported_tool",
        "unmappable_arguments", "unmappable_arguments", "unmappable_arguments", "unmappable_arguments",
        "unmappable_arguments", "Drop",
    ]
    assert "viewer state" in outs[1].detail  # insert
    assert "exit status" in outs[2].detail  # bash


def test_editor_failures_and_view_rejected() -> None:
    from harnessfit.core.trajectory import Step
    from harnessfit.formats.swe_agent.mapping import map_str_replace_editor
    from harnessfit.harness.card import load_card

    bad = Step(role="tool", tool_call_id="x", text="No replacement was performed, old_str `a` did not appear verbatim")
    out = map_str_replace_editor({"command": "str_replace", "path": "/a", "old_str": "a", "new_str": "b"}, bad,
                                 "swe_agent", lambda c, t: "has been edited" in t, load_card())
    assert isinstance(out, Failure) and out.reason == Reason.unmappable_arguments
    view = map_str_replace_editor({"command": "view", "path": "/a"}, None, "swe_agent", lambda c, t: True, load_card())
    assert isinstance(view, Failure) and "cat -n" in view.detail


def test_prompt_trailer_stripped() -> None:
    assert strip_swe_prompt("344\n(Open file: /t/r.py)\n(Current directory: /t)\nbash-$") == "344"
