"""The kept copy of a recorded Pi session: the episode's folder renamed, run-to-run fields pinned, nothing the
converter reads changed."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from harnessfit.convert import to_conversation
from harnessfit.core import Conversation
from harnessfit.errors import UserError
from harnessfit.formats.pi.reader import PiReader
from harnessfit.harness.card import load_card
from harnessfit.synth.session_copy import copy_session


def _session(path: Path, stamp: str, ids: list[str], cwd: str = "/tmp/run-81/ws") -> Path:
    def msg(n: int, message: dict) -> dict:
        parent = ids[n - 1] if n else None
        return {
            "type": "message",
            "id": ids[n],
            "parentId": parent,
            "timestamp": f"2026-11-02T{stamp}Z",
            "message": message,
        }

    call = {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": f"{cwd}/a.txt"}}
    rows = [
        {"type": "session", "version": 3, "id": f"0199-{stamp}", "timestamp": f"2026-11-02T{stamp}Z", "cwd": cwd},
        msg(0, {"role": "user", "content": [{"type": "text", "text": "Read a.txt."}], "timestamp": 1}),
        msg(
            1,
            {
                "role": "assistant",
                "content": [call],
                "stopReason": "toolUse",
                "model": "m",
                "provider": "p",
                "responseId": f"r-{stamp}",
                "durationMs": 17,
                "timestamp": 2,
            },
        ),
        msg(
            2,
            {
                "role": "toolResult",
                "toolCallId": "call_1",
                "toolName": "read",
                "content": [{"type": "text", "text": "one\n"}],
                "isError": False,
                "durationMs": 3,
                "timestamp": 3,
            },
        ),
        msg(
            3,
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "It says one."}],
                "stopReason": "stop",
                "model": "m",
                "provider": "p",
                "timestamp": 4,
            },
        ),
    ]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_two_recordings_of_one_episode_copy_to_the_same_bytes(tmp_path: Path) -> None:
    a = _session(tmp_path / "a.jsonl", "10:00:01.123", ["aa11bb22", "cc33dd44", "ee55ff66", "0a1b2c3d"])
    b = _session(tmp_path / "b.jsonl", "17:42:09.987", ["12345678", "9abcdef0", "fedcba98", "76543210"])
    copy_session(a, tmp_path / "a2.jsonl", "/workspace/t/seed-0", "golden/t/seed-0")
    copy_session(b, tmp_path / "b2.jsonl", "/workspace/t/seed-0", "golden/t/seed-0")
    assert (tmp_path / "a2.jsonl").read_bytes() == (tmp_path / "b2.jsonl").read_bytes()
    copy_session(b, tmp_path / "c2.jsonl", "/workspace/t/seed-0", "golden/t/seed-1")  # another episode: other ids
    assert (tmp_path / "c2.jsonl").read_bytes() != (tmp_path / "b2.jsonl").read_bytes()
    rows = [orjson.loads(line) for line in (tmp_path / "a2.jsonl").read_bytes().splitlines()]
    assert rows[0]["cwd"] == "/workspace/t/seed-0" and rows[0]["timestamp"].startswith("2026-11-02T00:00:00")
    assert [r["parentId"] for r in rows[1:]] == [None, *[r["id"] for r in rows[1:-1]]]  # the tree is kept
    assert rows[2]["message"]["content"][0]["arguments"] == {"path": "/workspace/t/seed-0/a.txt"}


def test_the_copy_converts_to_what_the_recording_does(tmp_path: Path) -> None:
    card = load_card("pi", "1.6.0")
    src = _session(tmp_path / "a.jsonl", "10:00:01.123", ["aa11bb22", "cc33dd44", "ee55ff66", "0a1b2c3d"], "/ws")
    copy_session(src, tmp_path / "a2.jsonl", "/ws", "golden/t/seed-0")
    (before,) = list(PiReader().read(src))
    (after,) = list(PiReader().read(tmp_path / "a2.jsonl"))
    conv_before, conv_after = to_conversation(before, card), to_conversation(after, card)
    assert isinstance(conv_before, Conversation) and isinstance(conv_after, Conversation)
    assert conv_before.messages == conv_after.messages and conv_before.meta.date == conv_after.meta.date


def test_a_file_without_a_session_header_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_bytes(b'{"type":"message"}\n')
    with pytest.raises(UserError, match="not a Pi session file"):
        copy_session(bad, tmp_path / "y.jsonl", "/w", "k")
