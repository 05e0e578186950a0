"""OpenAI chat → Pi mapping: Pi-named calls 1:1 in schema order, double encoding rejected, other tools unsupported;
and the real files end to end through the converter with the Pi card."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.core.rejection import Reason
from harnessfit.formats.base import Failure, MapContext, PiCall
from harnessfit.formats.openai_chat.mapping import OpenAIChatMapping
from harnessfit.formats.openai_chat.reader import OpenAIChatReader
from harnessfit.harness.card import load_card

CARD = load_card("pi", "0.73.1")

FIXTURES = Path(__file__).parent / "fixtures"


def first_outcome(traj) -> object:
    results = {s.tool_call_id: s for s in traj.steps if s.role == "tool"}
    call = next(c for s in traj.steps for c in s.tool_calls)
    return OpenAIChatMapping().map_call(call, results.get(call.id), MapContext(CARD, traj, "/"))


def test_pi_named_calls_and_double_encoding() -> None:
    good, obj, double = OpenAIChatReader().read(FIXTURES / "openai_chat_pi_tools.jsonl")
    out = first_outcome(good)
    assert out == PiCall(
        "read",
        {"path": "README.md", "limit": 20},
        "# Demo\n",
        ("openai_chat.pi_named_call", "openai_chat.arguments_reordered"),
    )
    assert list(out.arguments) == ["path", "limit"]
    assert first_outcome(obj) == PiCall("read", {"path": "README.md"}, "# Demo\n", ("openai_chat.pi_named_call",))
    bad = first_outcome(double)
    assert isinstance(bad, Failure) and bad.reason == Reason.arguments_double_encoded


def test_foreign_tool_is_unsupported_with_its_name(traces_dir: Path) -> None:
    (traj,) = OpenAIChatReader().read(traces_dir / "openai_chat/OpenHands__software-agent-sdk__fncall-llm-message.json")
    out = first_outcome(traj)
    assert isinstance(out, Failure) and out.reason == Reason.unsupported_tool and "'str_replace_editor'" in out.detail


@pytest.fixture(scope="module")
def card():
    from harnessfit.errors import UserError
    from harnessfit.harness.card import load_card

    try:
        return load_card()
    except UserError as exc:  # the card is captured from the installed CLI (harness stage)
        pytest.skip(str(exc))


EXPECTED = {
    # label: (read, accepted, {reason: count})
    "codex/jnarowski__agentcmd__rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl": (1, 1, {}),
    "codex/iampkuhz__feipi-session-browser__rollout-2026-06-19T10-14-27-019edda8-7eca-7710-b78b-6ce7607beaa1.jsonl": (
        1,
        0,
        {"unsupported_tool": 1},
    ),
    "swe_agent/SWE-agent__SWE-agent__marshmallow-code__marshmallow-1867__function_calling_replace.traj": (
        1,
        0,
        {"unsupported_tool": 1},
    ),
    "openhands/All-Hands-AI__OpenHands__basic.json": (1, 1, {}),
    # OpenHands strips every output: accepted at fidelity tier content (the default), unmappable_result at byte
    "openhands/OpenHands__software-agent-sdk__v1_conversation_cd94562403b9487ebdd4018e3f531dfd": (1, 1, {}),
    "openai_chat/OpenHands__software-agent-sdk__fncall-llm-message.json": (1, 0, {"unsupported_tool": 1}),
    "openai_chat/hiyouga__LLaMA-Factory__glaive_toolcall_en_demo.json": (300, 109, {"unsupported_tool": 191}),
}


def test_real_files_end_to_end(traces_dir: Path, card) -> None:
    from collections import Counter

    from harnessfit.convert import iter_unit_results
    from harnessfit.core.rejection import Rejection

    inputs = [traces_dir / d for d in ("codex", "swe_agent", "openhands", "openai_chat")]
    seen = {}
    for res in iter_unit_results(inputs, card):
        rejected = Counter(o.reason.value for o in res.outputs if isinstance(o, Rejection))
        accepted = sum(1 for o in res.outputs if not isinstance(o, Rejection))
        assert res.read == accepted + sum(rejected.values()) == len(res.outputs)
        seen[res.label] = (res.read, accepted, dict(rejected))
    assert seen == EXPECTED
