"""OpenHands reader: V0 event list (pairing by cause), V1 folder unit, finish as final text, noise events."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.openhands.reader import OpenHandsReader
from harnessfit.formats.registry import detect_format

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
        {"id": 0, "source": "user", "action": "message", "args": {"content": "list files"}, "timestamp": "2024-05-01T00:00:00"},
        {"id": 1, "source": "environment", "observation": "agent_state_changed", "content": "", "extras": {}},
        {"id": 2, "source": "agent", "action": "run", "args": {"command": "touch x", "thought": "Creating x."}},
        {"id": 3, "source": "agent", "observation": "run", "cause": 2, "content": "",
         "extras": {"command": "touch x", "metadata": {"exit_code": 0, "working_dir": "/ws"}}},
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
