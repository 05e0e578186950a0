"""The Pi reader on the session layouts the captured versions write (card ``session`` sections): 1.x keeps the
system prompt as a ``system`` message with named sections, and stores unparseable call arguments as ``{}`` plus
``argumentsError``. Files are written here from those facts; the real sessions are read in test_pi_sessions.py."""

from __future__ import annotations

from pathlib import Path

import orjson

from harnessfit.core.trajectory import Trajectory
from harnessfit.formats.pi.reader import PiReader
from harnessfit.harness.card import load_card


def _write(path: Path, entries: list[dict]) -> Path:
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-11-30T10:00:00.000Z", "cwd": "/w"}
    rows, parent = [header], None
    for k, entry in enumerate(entries):
        rows.append({"id": f"e{k}", "parentId": parent, "timestamp": "2026-11-30T10:00:01.000Z", **entry})
        parent = f"e{k}"
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    return path


def _msg(**message) -> dict:
    return {"type": "message", "message": message}


def test_every_card_names_the_layout_the_reader_handles() -> None:
    # the roles a captured version writes are the roles the reader maps (nothing falls through as unknown)
    for version in ("0.73.1", "1.6.0"):
        roles = set(load_card("pi", version).session["message_roles"])
        assert roles <= {"user", "assistant", "toolResult", "bashExecution", "system"}, (version, roles)
    assert "system" in load_card("pi", "1.6.0").session["message_roles"]
    assert "argumentsError" in load_card("pi", "1.6.0").session["content_blocks"]["toolCall"]


def test_system_message_and_unparsed_arguments(tmp_path: Path) -> None:
    sections = {
        "preamble": "You are a coding assistant.",
        "tools": "<tools>\n- read\n</tools>",
        "gone": None,
        "cwd": "<cwd>\n/w\n</cwd>",
    }
    raw = '"{\\"path\\": \\"a.txt\\"}"'
    path = _write(
        tmp_path / "s.jsonl",
        [
            {"type": "model_change", "provider": "local", "modelId": "m"},
            _msg(role="system", content="", sections=sections, toolsAdded=[{"name": "read"}], timestamp=1),
            _msg(role="user", content=[{"type": "text", "text": "Hi"}], timestamp=2),
            _msg(
                role="assistant",
                content=[
                    {
                        "type": "toolCall",
                        "id": "c1",
                        "name": "read",
                        "arguments": {},
                        "argumentsError": f"Tool arguments must be a JSON object\n\nReceived arguments:\n{raw}",
                    }
                ],
                stopReason="toolUse",
                timestamp=3,
            ),
            _msg(
                role="toolResult",
                toolCallId="c1",
                toolName="read",
                isError=True,
                timestamp=4,
                content=[{"type": "text", "text": 'Invalid arguments for tool "read": …'}],
            ),
            _msg(
                role="assistant",
                content=[{"type": "toolCall", "id": "c2", "name": "read", "arguments": {"path": "a.txt"}}],
                stopReason="toolUse",
                timestamp=5,
            ),
        ],
    )
    (traj,) = list(PiReader().read(path))
    assert isinstance(traj, Trajectory)
    system, user, first, _result, second = traj.steps
    # pi-ai getSystemMessageText: content, then every non-null section, joined by a blank line
    assert system.role == "system" and system.text == (
        "You are a coding assistant.\n\n<tools>\n- read\n</tools>\n\n<cwd>\n/w\n</cwd>"
    )
    assert system.meta["tools_added"] == ["read"] and system.meta["sections"] == list(sections)
    assert user.role == "user" and user.text == "Hi"
    assert first.tool_calls[0].arguments == raw  # the text the model sent, not the {} Pi replays
    assert second.tool_calls[0].arguments == {"path": "a.txt"}
