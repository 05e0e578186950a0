"""Fuzz: mutated real traces (byte flips, truncation, line drops, line duplication) never raise and always keep
read = accepted + rejected. Bounded examples so it stays well under a minute on two cores."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnessfit.convert.units import convert_unit
from harnessfit.core import Conversation, Rejection
from harnessfit.formats.registry import iter_units
from harnessfit.harness.card import load_card

# real files of every format with a small enough copy (the 1 MB Pi session and the 740 KB glaive set make each
# example slow without adding shapes)
SOURCES = [
    "pi/kvsankar__agent-history__session-01.jsonl",
    "claude_code/marot__spotter__short.jsonl",
    "claude_code/iampkuhz__feipi-session-browser__8a283a61-e3f0-4e8f-ba06-6711e2fcf2ed.jsonl",
    "openai_chat/OpenHands__software-agent-sdk__fncall-llm-message.json",
    "openhands/All-Hands-AI__OpenHands__basic.json",
    "codex/iampkuhz__feipi-session-browser__rollout-2026-06-19T10-14-27-019edda8-7eca-7710-b78b-6ce7607beaa1.jsonl",
    "codex/jnarowski__agentcmd__rollout-2025-09-25T15-12-14-019982b8-3422-79e0-8b3b-05abaf4f3c3e.jsonl",
    "swe_agent/SWE-agent__SWE-agent__marshmallow-code__marshmallow-1867__function_calling_replace.traj",
]
CARD = load_card("pi", "0.73.1")
TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


@st.composite
def mutation(draw):
    name = draw(st.sampled_from(SOURCES))
    data = bytearray((TRACES / name).read_bytes())
    kind = draw(st.sampled_from(["flip", "truncate", "drop_line", "dup_line", "splice"]))
    if kind == "flip":
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
    elif kind == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    else:
        lines = bytes(data).split(b"\n")
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        if kind == "drop_line":
            del lines[i]
        elif kind == "dup_line":
            lines.insert(i, lines[i])
        else:
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))] + b'{"x":'
        data = bytearray(b"\n".join(lines))
    return name, bytes(data)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(mutation())
def test_mutated_traces_never_crash_and_identity_holds(tmp_path_factory, case):
    name, data = case
    d = tmp_path_factory.mktemp("fuzz")
    target = d / Path(name).name
    target.write_bytes(data)
    units = iter_units([target])
    assert len(units) == 1
    res = convert_unit(units[0], CARD)
    assert res.read == len(res.outputs) >= 1
    for out in res.outputs:
        assert isinstance(out, (Conversation, Rejection))
        if isinstance(out, Rejection):
            assert out.reason and out.detail and out.repair_hint
    # no reader/converter crash leaked as a generic failure row
    assert not any(
        isinstance(o, Rejection) and ("failed after" in o.detail or "converter failed" in o.detail) for o in res.outputs
    ), [o.detail for o in res.outputs if isinstance(o, Rejection)]
