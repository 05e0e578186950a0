"""SWE-agent .traj reader: the real function-calling trajectory, reused ids, text-action era, damaged files."""

from __future__ import annotations

from pathlib import Path

from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.registry import detect_format
from harnessfit.formats.swe_agent.reader import SweAgentReader

FIXTURES = Path(__file__).parent / "fixtures"
REAL = "swe_agent/SWE-agent__SWE-agent__marshmallow-code__marshmallow-1867__function_calling_replace.traj"


def test_real_trajectory(traces_dir: Path) -> None:
    path = traces_dir / REAL
    assert detect_format(path) == "swe_agent"
    (traj,) = list(SweAgentReader().read(path))
    assert isinstance(traj, Trajectory)
    assert traj.cwd == "/testbed"
    assert [s.role for s in traj.steps[:2]] == ["system", "user"]
    calls = [c for s in traj.steps for c in s.tool_calls]
    assert [c.name for c in calls] == [
        "create",
        "insert",
        "bash",
        "bash",
        "find_file",
        "open",
        "edit",
        "edit",
        "bash",
        "bash",
        "submit",
    ]
    ids = [c.id for c in calls]
    assert len(set(ids)) == len(ids)  # SWE-agent reused ids; each call now has its own
    assert "swe_agent: 5 reused tool-call ids made unique" in traj.provenance.transformations
    results = [s.tool_call_id for s in traj.steps if s.role == "tool"]
    assert results == ids  # each observation pairs with the call just before it
    assert isinstance(calls[0].arguments, str)  # raw argument text kept


def test_text_action_era_is_rejected_with_a_reason() -> None:
    path = FIXTURES / "swe_agent_text_action.traj"
    assert SweAgentReader().detect(path)
    (r,) = list(SweAgentReader().read(path))
    assert isinstance(r, Rejection) and r.reason == Reason.unsupported_tool
    assert "text-action" in r.detail and "1 demonstration" in r.detail


def test_bad_documents(tmp_path: Path) -> None:
    cut = tmp_path / "cut.traj"
    cut.write_text((FIXTURES / "swe_agent_editor.traj").read_text()[:300])
    (r,) = list(SweAgentReader().read(cut))
    assert isinstance(r, Rejection) and r.reason in (Reason.truncated_file, Reason.parse_error)
    nohist = tmp_path / "nohist.traj"
    nohist.write_text('{"trajectory": [], "info": {}}')
    (r,) = list(SweAgentReader().read(nohist))
    assert isinstance(r, Rejection) and r.reason == Reason.parse_error
    empty = tmp_path / "empty.traj"
    empty.write_text('{"trajectory": [], "history": []}')
    (r,) = list(SweAgentReader().read(empty))
    assert isinstance(r, Rejection) and r.reason == Reason.empty
