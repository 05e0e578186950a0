"""OpenHands reader: V0 event list (pairing by cause), V1 folder unit, finish as final text, noise events, and every
V1 observation layout the SDK wrote (text, error flag and exit code under their keys of each version)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers.openhands_v1 import BENCHMARKS, LAYOUTS, action_event, observation_event, terminal_observation
from _helpers.raw_calls import count_calls
from harnessfit.convert import convert
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.openhands.events import v1_observation
from harnessfit.formats.openhands.reader import OpenHandsReader
from harnessfit.formats.registry import detect_format
from harnessfit.harness.card import load_card

CARD = load_card("pi", "0.73.1")

V0 = "openhands/All-Hands-AI__OpenHands__basic.json"
V1 = "openhands/OpenHands__software-agent-sdk__v1_conversation_cd94562403b9487ebdd4018e3f531dfd"


def test_v0_real_event_list(traces_dir: Path) -> None:
    path = traces_dir / V0
    assert detect_format(path) == "openhands"
    (traj,) = list(OpenHandsReader().read(path))
    assert isinstance(traj, Trajectory)
    assert [s.role for s in traj.steps] == ["user", "assistant", "tool", "assistant"]
    call = traj.steps[1].tool_calls[0]
    assert call.name == "str_replace_editor" and call.id == "toolu_017nBp7UfiGqyrA7j77HgtFP"
    assert json.loads(call.arguments)["command"] == "create"
    assert traj.steps[2].tool_call_id == call.id  # paired by cause
    assert traj.steps[-1].text.startswith("I've created a simple implementation")  # finish -> final text
    assert traj.cwd == "/workspace" and traj.date == "2025-01-27"


def test_v1_folder_is_one_unit(traces_dir: Path) -> None:
    folder = traces_dir / V1
    reader = OpenHandsReader()
    assert reader.detect(folder)
    assert not reader.detect(folder / "events" / sorted(p.name for p in (folder / "events").iterdir())[0])
    (traj,) = list(reader.read(folder))
    assert isinstance(traj, Trajectory)
    assert traj.cwd == "/workspace/project/software-agent-sdk"
    assert [s.role for s in traj.steps] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant"]
    assert traj.steps[3].exit_code == 0 and traj.steps[3].text == ""
    assert traj.steps[4].text == "The current directory has been written to tool_output.txt."
    assert "openhands: finish_observation_dropped x1" in traj.provenance.transformations


def test_v1_broken_event_file(traces_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "conv"
    shutil.copytree(traces_dir / V1, folder)
    for p in folder.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    victim = sorted((folder / "events").iterdir())[3]
    victim.write_text('{"kind": "ObservationEvent", ')
    out = list(OpenHandsReader().read(folder))
    rej = [r for r in out if isinstance(r, Rejection)]
    trajs = [t for t in out if isinstance(t, Trajectory)]
    assert len(rej) == 1 and rej[0].reason in (Reason.truncated_file, Reason.parse_error) and rej[0].line_start == 4
    assert len(trajs) == 1 and "lines_lost" in trajs[0].flags


def test_v0_noise_and_run_actions(tmp_path: Path) -> None:
    events = [
        {
            "id": 0,
            "source": "user",
            "action": "message",
            "args": {"content": "list files"},
            "timestamp": "2024-05-01T00:00:00",
        },
        {"id": 1, "source": "environment", "observation": "agent_state_changed", "content": "", "extras": {}},
        {"id": 2, "source": "agent", "action": "run", "args": {"command": "touch x", "thought": "Creating x."}},
        {
            "id": 3,
            "source": "agent",
            "observation": "run",
            "cause": 2,
            "content": "",
            "extras": {"command": "touch x", "metadata": {"exit_code": 0, "working_dir": "/ws"}},
        },
        {"id": 4, "source": "agent", "action": "finish", "args": {"final_thought": "Created x.", "thought": ""}},
    ]
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    assert OpenHandsReader().detect(path)
    (traj,) = list(OpenHandsReader().read(path))
    assert traj.cwd == "/ws"
    assert traj.steps[1].tool_calls[0].name == "action:run" and traj.steps[1].text == "Creating x."
    assert traj.steps[2].tool_call_id == "oh_event_2" and traj.steps[2].exit_code == 0
    assert traj.steps[-1].text == "Created x."
    assert "openhands: observation_agent_state_changed_skipped x1" in traj.provenance.transformations


# ------------------------------------------------------------------------------------ V1 observation layouts
# Synthetic events in the SDK's layouts (``_helpers.openhands_v1``).
def _eval_run(tmp_path: Path, pairs: list[tuple[str, dict[str, Any], dict[str, Any]]], **extra: Any) -> Trajectory:
    """An evaluation output (one instance) of V1 events: one call and its observation per (name, arguments, obs)."""
    history: list[dict[str, Any]] = []
    for k, (name, arguments, obs) in enumerate(pairs):
        history += [action_event(f"call_{k}", name, arguments), observation_event(f"call_{k}", name, obs, **extra)]
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps({"instance_id": "i-1", "instruction": "Do it.", "history": history}) + "\n")
    assert OpenHandsReader().detect(path)
    (traj,) = list(OpenHandsReader().read(path))
    assert isinstance(traj, Trajectory)
    return traj


@pytest.mark.parametrize("layout", LAYOUTS)
def test_v1_terminal_layouts_give_text_error_and_exit_code(tmp_path: Path, layout: str) -> None:
    traj = _eval_run(tmp_path, [("terminal", {"command": "ls"}, terminal_observation(layout, "a.py\nb.py", 2))])
    (step,) = [s for s in traj.steps if s.role == "tool"]
    assert (step.text, step.is_error, step.exit_code) == ("a.py\nb.py", False, 2)
    assert step.meta["status"] == "[The command completed with exit code 2.]"
    from_metadata = "openhands: exit_code_from_metadata x1" in traj.provenance.transformations
    assert from_metadata == (layout != "content+code")


@settings(max_examples=200, deadline=None)
@given(output=st.text(max_size=40), code=st.integers(-1, 255), error=st.booleans())
def test_v1_observation_layouts_read_the_same(output: str, code: int, error: bool) -> None:
    """Property: whatever the output, exit code and error flag, the three layouts read alike."""
    read = [v1_observation(terminal_observation(layout, output, code, error)) for layout in LAYOUTS]
    assert all(r[:3] == (output, error, code) for r in read)
    assert all("no_text" not in r[3] and "no_exit_code" not in r[3] for r in read)


def test_v1_editor_layouts() -> None:
    """The older editor layout: the model saw ``error`` (a message) instead of ``output``."""
    ok = {
        "kind": "FileEditorObservation",
        "command": "create",
        "output": "File created successfully at: /w/a.py",
        "path": "/w/a.py",
        "prev_exist": False,
        "old_content": None,
        "new_content": "x",
        "error": None,
    }
    failed = {**ok, "output": "", "error": "Ran into [Errno 13] Permission denied: '/w/b.py'", "path": "/w/b.py"}
    current = {
        "kind": "FileEditorObservation",
        "command": "create",
        "is_error": False,
        "path": "/w/c.py",
        "content": [{"type": "text", "text": "File created successfully at: /w/c.py"}],
    }
    assert v1_observation(ok)[:2] == ("File created successfully at: /w/a.py", False)
    assert v1_observation(failed)[:2] == ("Ran into [Errno 13] Permission denied: '/w/b.py'", True)
    assert v1_observation(current)[:2] == ("File created successfully at: /w/c.py", False)
    assert not any("no_text" in v1_observation(o)[3] for o in (ok, failed, current))


def test_v1_missing_fields_are_named(tmp_path: Path) -> None:
    text, _, code, meta = v1_observation({"kind": "GlobObservation", "files": ["a.py"], "pattern": "*.py"})
    assert (text, code) == ("", None)
    assert meta["no_text"] == "GlobObservation has no content, output, message or error text"
    assert meta["no_exit_code"] == "exit_code absent, no metadata"
    _, _, code, meta = v1_observation(
        {"kind": "TerminalObservation", "content": [], "exit_code": None, "metadata": {"exit_code": None}}
    )
    assert code is None and meta["no_exit_code"] == "exit_code null, metadata.exit_code null"
    traj = _eval_run(tmp_path, [("terminal", {"command": "ls"}, {"kind": "TerminalObservation", "exit_code": 0})])
    assert "openhands: observation_TerminalObservation_without_text x1" in traj.provenance.transformations


def test_v1_older_event_shapes(tmp_path: Path) -> None:
    """Builds before 2025-09-19 wrote dotted kinds; before 2025-10-02 the tool call was litellm's (``function``)."""
    action = action_event("call_0", "execute_bash", {"command": "true"})
    action["kind"] = "openhands.sdk.event.llm_convertible.ActionEvent"
    action["tool_call"] = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "execute_bash", "arguments": '{"command": "true"}'},
    }
    obs = observation_event("call_0", "execute_bash", terminal_observation("output", "", 0))
    obs["kind"] = "openhands.sdk.event.llm_convertible.ObservationEvent"
    obs["observation"]["kind"] = "openhands.tools.execute_bash.definition.ExecuteBashObservation"
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps({"instance_id": "i", "instruction": "Go.", "history": [action, obs]}) + "\n")
    (traj,) = list(OpenHandsReader().read(path))
    (call,) = [c for s in traj.steps for c in s.tool_calls]
    assert (call.name, call.arguments) == ("execute_bash", '{"command": "true"}')
    (step,) = [s for s in traj.steps if s.role == "tool"]
    assert step.exit_code == 0 and step.meta["observation"] == "ExecuteBashObservation"


def test_v1_extended_content_is_kept_apart(tmp_path: Path) -> None:
    rule = [{"type": "text", "text": "Rule for *.py: run the linter after editing."}]
    traj = _eval_run(
        tmp_path,
        [("terminal", {"command": "true"}, terminal_observation("content+code", "", 0))],
        extended_content=rule,
    )
    (step,) = [s for s in traj.steps if s.role == "tool"]
    assert step.text == "" and step.meta["extended_content"] == rule[0]["text"]
    assert "openhands: observation_extended_content x1" in traj.provenance.transformations


def test_v1_image_parts_are_counted(tmp_path: Path) -> None:
    """An image in an observation's content (a viewed picture, a screenshot) reaches the gates as a result image."""
    parts = [
        {"type": "text", "text": "Image file: /w/plot.png"},
        {"type": "image", "image_urls": ["data:image/png;base64,iVBORw0KGgo="]},
    ]
    obs = {"kind": "FileEditorObservation", "command": "view", "is_error": False, "content": parts}
    traj = _eval_run(tmp_path, [("file_editor", {"command": "view", "path": "/w/plot.png"}, obs)])
    (step,) = [s for s in traj.steps if s.role == "tool"]
    assert step.text == "Image file: /w/plot.png" and step.images == 1


def test_v1_real_output_layout_has_text_and_exit_codes(traces_dir: Path) -> None:
    """A real evaluation output in the older layout (``output``, ``error``, ``metadata.exit_code``)."""
    trajs = list(OpenHandsReader().read(traces_dir.parent / "traces-extra" / BENCHMARKS))
    assert trajs and all(isinstance(t, Trajectory) for t in trajs)
    results = [s for t in trajs for s in t.steps if s.role == "tool"]
    assert results and all(s.text for s in results)
    assert all(isinstance(s.exit_code, int) and "no_exit_code" not in s.meta for s in results)


# ------------------------------------------------------------------------------------------------ condensation
def _v0_condensed(where: int) -> list[dict[str, Any]]:
    """A V0 run of three commands and a finish, with a ``condensation`` action after the ``where``-th command."""
    events: list[dict[str, Any]] = [{"id": 0, "source": "user", "action": "message", "args": {"content": "build it"}}]
    for k in range(3):
        events += [
            {"id": 10 + 2 * k, "source": "agent", "action": "run", "args": {"command": f"step {k}"}},
            {
                "id": 11 + 2 * k,
                "source": "agent",
                "observation": "run",
                "cause": 10 + 2 * k,
                "content": "",
                "extras": {"metadata": {"exit_code": 0}},
            },
        ]
        if k + 1 == where:
            events.append(
                {
                    "id": 30,
                    "source": "agent",
                    "action": "condensation",
                    "args": {"forgotten_event_ids": [10, 11], "summary": "Ran step 0.", "summary_offset": 1},
                }
            )
    events.append({"id": 40, "source": "agent", "action": "finish", "args": {"final_thought": "Built."}})
    return events


@pytest.mark.parametrize("where", [1, 2, 3])
def test_a_condensation_ends_the_steps_and_counts_every_later_call(tmp_path: Path, where: int) -> None:
    """After a condensation the model sees OpenHands' condensed view, which is not rebuilt: the steps stop there and
    every later call (the finish too) is counted as ``context_not_rebuilt``, so calls = kept + skipped."""
    path = tmp_path / "events.json"
    path.write_text(json.dumps(_v0_condensed(where)))
    (traj,) = list(OpenHandsReader().read(path))
    kept = [c.name for s in traj.steps for c in s.tool_calls]
    assert kept == ["action:run"] * where
    assert traj.skipped_calls == {"context_not_rebuilt": 3 - where + 1}  # later commands and the finish
    assert not any(s.meta.get("folded_calls") for s in traj.steps)
    assert "openhands: condensation x1" in traj.provenance.transformations
    assert len(kept) + sum(traj.skipped_calls.values()) == count_calls("openhands", path) == 4
    out = tmp_path / "out"
    convert([path], out, CARD, install_dir="/opt/pi")
    doc = json.loads((out / "yield.json").read_text())
    assert doc["identity_holds"] and doc["total"]["lost"].get("context_not_rebuilt") == 3 - where + 1


def test_a_v1_condensation_event_ends_the_steps(tmp_path: Path) -> None:
    history = [
        action_event("c0", "terminal", {"command": "ls"}),
        observation_event("c0", "terminal", terminal_observation("content+code", "a.py", 0)),
        {
            "kind": "Condensation",
            "id": "cond-1",
            "source": "environment",
            "forgotten_event_ids": ["a-c0"],
            "summary": "Listed the files.",
            "summary_offset": 1,
        },
        action_event("c1", "terminal", {"command": "cat a.py"}),
        observation_event("c1", "terminal", terminal_observation("content+code", "x = 1", 0)),
    ]
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps({"instance_id": "i-1", "instruction": "Look.", "history": history}) + "\n")
    (traj,) = list(OpenHandsReader().read(path))
    assert [c.id for s in traj.steps for c in s.tool_calls] == ["c0"]
    assert traj.skipped_calls == {"context_not_rebuilt": 1}
    assert count_calls("openhands", path) == 2
