"""Codex rollout reader: real 2025 and 2026 rollouts, injected context, event_msg duplicates, damaged files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessfit.core.rejection import Reason, Rejection
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.codex.reader import CodexReader
from harnessfit.formats.registry import detect_format

FIXTURES = Path(__file__).parent / "fixtures"
R2025 = "codex/jnarowski__agentcmd__rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl"
R2026 = "codex/iampkuhz__feipi-session-browser__rollout-2026-06-19T10-14-27-019edda8-7eca-7710-b78b-6ce7607beaa1.jsonl"


def read_all(path: Path) -> list[Trajectory | Rejection]:
    return list(CodexReader().read(path))


def test_real_2025_rollout_reads_as_one_trajectory(traces_dir: Path) -> None:
    path = traces_dir / R2025
    assert CodexReader().detect(path)
    assert detect_format(path) == "codex"
    (traj,) = read_all(path)
    assert isinstance(traj, Trajectory)
    assert traj.cwd == "/Users/jnarowski/Dev/spectora/src/spectora-labs-monorepo-v2"
    assert traj.date == "2025-09-25"
    assert traj.source_harness_version == "0.40.0"
    users = [s for s in traj.steps if s.role == "user"]
    # one real request: the <environment_context> item is dropped and the event_msg copy is not counted again
    assert len(users) == 1
    assert users[0].text.startswith("# Context from my IDE setup:")
    calls = [c for s in traj.steps for c in s.tool_calls]
    assert len(calls) == 34 and {c.name for c in calls} == {"shell"}
    assert sum(1 for s in traj.steps if s.role == "tool") == 34
    finals = [s for s in traj.steps if s.role == "assistant" and s.text]
    assert len(finals) == 1 and finals[0] is traj.steps[-1]
    notes = traj.provenance.transformations
    assert "codex: event_msg_user_message_ignored x1" in notes
    assert "codex: injected_context_dropped x1" in notes
    assert "codex: encrypted_reasoning_ignored x33" in notes


def test_real_2026_rollout_keeps_multi_agent_calls(traces_dir: Path) -> None:
    (traj,) = read_all(traces_dir / R2026)
    assert isinstance(traj, Trajectory)
    assert traj.date == "2026-06-19"
    names = [c.name for s in traj.steps for c in s.tool_calls]
    assert names.count("exec_command") == 2 and names.count("spawn_agent") == 2 and "tool_search" in names
    users = [s for s in traj.steps if s.role == "user"]
    assert len(users) == 1  # AGENTS.md, environment context and sub-agent notifications are not requests
    # three calls issued in one response are one assistant step
    assert any(len(s.tool_calls) == 3 for s in traj.steps)


def test_fixture_rollout_steps(tmp_path: Path) -> None:
    (traj,) = read_all(FIXTURES / "codex_patch_rollout.jsonl")
    assert isinstance(traj, Trajectory)
    assert traj.repository == "git@example.com:dev/proj.git"
    assert [s.role for s in traj.steps].count("tool") == 5
    assert traj.steps[-1].text == "Done: main prints hello and notes/todo.md exists."


def test_corrupt_line_is_a_rejection_and_flags_the_trajectory(tmp_path: Path) -> None:
    lines = (FIXTURES / "codex_patch_rollout.jsonl").read_text().splitlines()
    lines[5] = lines[5][:40]
    bad = tmp_path / "rollout-bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    out = read_all(bad)
    rejections = [r for r in out if isinstance(r, Rejection)]
    trajs = [t for t in out if isinstance(t, Trajectory)]
    assert len(rejections) == 1 and rejections[0].reason == Reason.parse_error and rejections[0].line_start == 6
    assert len(trajs) == 1 and "lines_lost" in trajs[0].flags


def test_empty_and_contextless_files(tmp_path: Path) -> None:
    empty = tmp_path / "rollout-empty.jsonl"
    empty.write_text("")
    (r,) = read_all(empty)
    assert isinstance(r, Rejection) and r.reason == Reason.empty
    meta_only = tmp_path / "rollout-meta.jsonl"
    meta_only.write_text((FIXTURES / "codex_patch_rollout.jsonl").read_text().splitlines()[0] + "\n")
    (r,) = read_all(meta_only)
    assert isinstance(r, Rejection) and r.reason == Reason.empty


EXTRA = Path(__file__).resolve().parents[2].parent / "shared" / "traces-extra"
SPAWNED = (
    "codex/iampkuhz__feipi-session-browser__rollout-2026-06-19T12-32-38-019ede26-fff1-7790-ad39-a8a29eda9af4.jsonl"
)


def test_spawned_subagent_rollout_is_a_trajectory_opening_with_the_parents_message() -> None:
    """A rollout a ``spawn_agent`` call started (``source.subagent.thread_spawn``) is a whole agent conversation whose
    user message is the ``message`` its parent wrote: a trajectory like any, noting its parent thread."""
    (traj,) = read_all(EXTRA / SPAWNED)
    assert isinstance(traj, Trajectory) and "subagent" not in traj.flags
    users = [s for s in traj.steps if s.role == "user"]
    assert len(users) == 1 and users[0].text.startswith("Goal: 写入并验证 Subagent B 的证明文件。")
    assert "subagent_of:codex:019ede24-67de-7b11-b46f-7922530907a9" in traj.provenance.transformations


def test_a_rollout_that_spawns_sub_agents_names_its_thread(traces_dir: Path) -> None:
    """So that the build puts its sub-agents' rollouts (other files) in its split."""
    (traj,) = read_all(traces_dir / R2026)
    assert "session:codex:019edda8-7eca-7710-b78b-6ce7607beaa1" in traj.provenance.transformations
    (plain,) = read_all(traces_dir / R2025)  # no spawn_agent: nothing to link
    assert not any(t.startswith("session:") for t in plain.provenance.transformations)


def _rollout(tmp_path: Path, source: object) -> Path:
    rows = [
        {
            "timestamp": "2026-01-01T00:00:00Z",
            "type": "session_meta",
            "payload": {
                "id": "t-1",
                "timestamp": "2026-01-01T00:00:00Z",
                "cwd": "/w",
                "cli_version": "0.140.0",
                "source": source,
            },
        },
        {
            "timestamp": "2026-01-01T00:00:01Z",
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "review it"}]},
        },
        {
            "timestamp": "2026-01-01T00:00:02Z",
            "type": "response_item",
            "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
        },
    ]
    path = tmp_path / "rollout-2026-01-01T00-00-00-t-1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(("source", "kind"), [("review", "review"), ({"other": "guardian"}, "other")])
def test_codex_internal_subagents_stay_flagged(tmp_path: Path, source: object, kind: str) -> None:
    """Review, compaction, guardian… sub-agents run a prompt Codex wrote, no parent's request: flagged, naming why."""
    (traj,) = read_all(_rollout(tmp_path, {"subagent": source}))
    assert "subagent" in traj.flags
    assert any(t.startswith("subagent:") and kind in t for t in traj.provenance.transformations)
