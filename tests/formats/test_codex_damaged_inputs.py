"""Damaged copies of the real Codex / SWE-agent / OpenHands / OpenAI-chat files never raise from ``read``."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.core.rejection import Rejection
from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.codex.reader import CodexReader
from harnessfit.formats.openai_chat.reader import OpenAIChatReader
from harnessfit.formats.openhands.reader import OpenHandsReader
from harnessfit.formats.swe_agent.reader import SweAgentReader

CASES = [
    (CodexReader, "codex/jnarowski__agentcmd__rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl"),
    (
        SweAgentReader,
        "swe_agent/SWE-agent__SWE-agent__marshmallow-code__marshmallow-1867__function_calling_replace.traj",
    ),
    (OpenHandsReader, "openhands/All-Hands-AI__OpenHands__basic.json"),
    (OpenAIChatReader, "openai_chat/OpenHands__software-agent-sdk__fncall-llm-message.json"),
]


@pytest.mark.parametrize("reader_cls, rel", CASES)
@pytest.mark.parametrize("damage", ["cut_0.3", "cut_0.77", "nul", "latin1", "garbage_line"])
def test_damaged_copy_reads_without_exception(
    traces_dir: Path, tmp_path: Path, reader_cls, rel: str, damage: str
) -> None:
    data = (traces_dir / rel).read_bytes()
    if damage.startswith("cut_"):
        data = data[: int(len(data) * float(damage[4:]))]
    elif damage == "nul":
        data = data[:100] + b"\x00" + data[100:]
    elif damage == "latin1":
        data = data[:200] + b"\xe9\xff" + data[200:]
    else:
        mid = data.find(b"\n", len(data) // 2)
        data = data[: mid + 1] + b"{not json\n" + data[mid + 1 :] if mid > 0 else data + b"\n{not json"
    path = tmp_path / Path(rel).name
    path.write_bytes(data)
    out = list(reader_cls().read(path))
    assert out, "every input yields at least one record"
    assert all(isinstance(o, (Trajectory, Rejection)) for o in out)
    if damage in ("nul", "latin1"):
        assert any(isinstance(o, Rejection) for o in out)
