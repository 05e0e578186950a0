"""An episode page shows the system prompt Pi 1.x sent: 1.x keeps it in the session's ``system`` message as named
``sections`` (the content may be empty), which the page joins as pi-ai's ``getSystemMessageText`` does."""

from __future__ import annotations

from harnessfit.report.episodes import _items


def test_a_pi_1x_system_message_shows_its_sections() -> None:
    msg = {
        "role": "system",
        "content": [],
        "sections": {"base": "You are an expert coding assistant.", "tools": "Available tools:\n- read", "empty": None},
    }
    [item] = _items([msg], card=None)
    assert item["role"] == "system"
    assert [b["text"] for b in item["blocks"]] == ["You are an expert coding assistant.\n\nAvailable tools:\n- read"]
    [plain] = _items([{"role": "system", "content": [{"type": "text", "text": "hello"}]}], card=None)
    assert plain["blocks"][0]["text"] == "hello"
