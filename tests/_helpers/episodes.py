"""A finished eval episode as the runner leaves it, for scorer and reward tests: a linear Pi v3 session file in the
episode's folder and the runner's facts about it (no event stream, no stderr)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _helpers.pi_sessions import write_rows
from harnessfit.eval.episode import EpisodeFacts

__all__ = ["recorded_episode"]


def recorded_episode(
    folder: Path, task_id: str, messages: list[dict[str, Any]], *, expected_change: bool, checker_exit_code: int
) -> EpisodeFacts:
    """``folder/s.jsonl``: a session header, then ``messages`` as one chain of entries; the facts point at it."""
    rows: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": "x", "cwd": "/w"}]
    for i, m in enumerate(messages):
        rows.append({"type": "message", "id": f"{i:08x}", "parentId": f"{i - 1:08x}" if i else None, "message": m})
    write_rows(folder / "s.jsonl", rows)
    return EpisodeFacts(
        task_id=task_id,
        seed=0,
        sandbox="bwrap",
        max_turns=8,
        events_file="none.jsonl",
        stderr_file="none.txt",
        session_file="s.jsonl",
        pi_exit_code=0,
        expected_change=expected_change,
        checker_exit_code=checker_exit_code,
    )
