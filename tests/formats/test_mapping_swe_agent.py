"""SWE-agent → Pi mapping: str_replace_editor create/str_replace exact; bash and file views are labels whose results do
not render; stateful commands and directory views block; submit ends the episode."""

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
        "write",
        {"path": "/repo/test_app.py", "content": "def test():\n    assert True\n"},
        "Successfully wrote 28 bytes to /repo/test_app.py",
        ("swe_agent.str_replace_editor.create->write",),
    )
    assert replace == PiCall(
        "edit",
        {"path": "/repo/app.py", "edits": [{"oldText": "print('hi')", "newText": "print('hello')"}]},
        "Successfully replaced 1 block(s) in /repo/app.py.",
        ("swe_agent.str_replace_editor.str_replace->edit",),
    )
    assert submit == Drop("swe_agent.submit:end-of-episode", ends_episode=True)


def test_real_trajectory_outcomes(traces_dir: Path) -> None:
    (traj,) = SweAgentReader().read(traces_dir / REAL)
    outs = outcomes(traj)
    first = outs[0]
    assert first == PiCall(
        "write",
        {"path": "reproduce.py", "content": "\n"},
        "Successfully wrote 1 bytes to reproduce.py",
        ("swe_agent.create->write",),
    )

    def kind(o: object) -> str:
        if isinstance(o, PiCall) and isinstance(o.result, Failure):
            return f"{o.name}+{o.result.reason.value}"
        return o.reason.value if isinstance(o, Failure) else type(o).__name__

    assert [kind(o) for o in outs] == [
        "PiCall",
        "unmappable_arguments",
        "bash+unmappable_result",
        "bash+unmappable_result",
        "unsupported_tool",
        "unmappable_arguments",
        "unmappable_arguments",
        "unmappable_arguments",
        "bash+unmappable_result",
        "bash+unmappable_result",
        "Drop",
    ]
    assert "viewer state" in outs[1].detail  # insert
    assert "exit status" in outs[2].result.detail  # bash


def test_editor_failures_and_view_rejected() -> None:
    from harnessfit.core.trajectory import Step
    from harnessfit.formats.swe_agent.mapping import map_str_replace_editor
    from harnessfit.harness.card import load_card

    bad = Step(role="tool", tool_call_id="x", text="No replacement was performed, old_str `a` did not appear verbatim")
    out = map_str_replace_editor(
        {"command": "str_replace", "path": "/a", "old_str": "a", "new_str": "b"},
        bad,
        "swe_agent",
        lambda c, t: "has been edited" in t,
        load_card(),
    )
    assert isinstance(out, PiCall) and out.name == "edit"
    assert isinstance(out.result, Failure) and out.result.reason == Reason.unmappable_result
    # a file view is Pi's read, whose text cannot be rebuilt from the cat -n rendering
    shown = Step(role="tool", tool_call_id="x", text="Here's the result of running `cat -n` on /a:\n     1\tx\n")
    view = map_str_replace_editor(
        {"command": "view", "path": "/a", "view_range": [3, 9]}, shown, "swe_agent", lambda c, t: True, load_card()
    )
    assert isinstance(view, PiCall) and view.arguments == {"path": "/a", "offset": 3, "limit": 7}
    assert isinstance(view.result, Failure) and "cat -n" in view.result.detail
    # a directory view says so, and no default Pi tool lists a directory
    listing = Step(
        role="tool",
        tool_call_id="x",
        text="Here's the files and directories up to 2 levels deep in /r, excluding hidden items:\n/r\n/r/a.py\n",
    )
    dview = map_str_replace_editor(
        {"command": "view", "path": "/r"}, listing, "swe_agent", lambda c, t: True, load_card()
    )
    assert isinstance(dview, Failure) and dview.reason == Reason.unsupported_tool
    assert "directory" in dview.detail and "cat -n" not in dview.detail and "ls" in dview.repair_hint


def test_prompt_trailer_stripped() -> None:
    assert strip_swe_prompt("344\n(Open file: /t/r.py)\n(Current directory: /t)\nbash-$") == "344"
