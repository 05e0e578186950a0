"""Pi's history rules (``convert.history``) as the builder applies them, for every source format and by the card's
version: synthetic results, aborted turns, another model's thinking, empty results, empty user parts, ``|`` ids,
and ``labels_from`` honoured by the exports. (The real Pi checks the same rules in tests/harness/
test_pi_history_oracle.py.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harnessfit.convert import to_conversation
from harnessfit.convert.builder import build_draft
from harnessfit.convert.history import history_rules, short_hash
from harnessfit.core import Conversation, Provenance, Reason, Rejection, Step, ToolCall, Trajectory
from harnessfit.dataset.exports import ConversationExport, decision_points, sft_records
from harnessfit.harness.card import load_card
from harnessfit.harness.versions import PI_CARD_VERSIONS

OLD, NEW = load_card("pi", "0.73.1"), load_card("pi", "1.6.0")


def _traj(steps: list[Step], source: str = "openai_chat") -> Trajectory:
    return Trajectory(
        id="t",
        source=source,
        steps=steps,
        cwd="/w",
        date="2026-01-02",
        root_request_id="r",
        provenance=Provenance(format=source, file="f", sha256="0" * 64),
    )


def _read(cid: str, path: str = "a.txt") -> ToolCall:
    return ToolCall(id=cid, name="read", arguments={"path": path})


def _result(cid: str, text: str, images: int = 0) -> Step:
    return Step(role="tool", tool_call_id=cid, text=text, images=images)


def test_a_call_that_lost_its_result_gets_the_synthetic_one_after_the_others() -> None:
    steps = [
        Step(role="user", text="go"),
        Step(role="assistant", tool_calls=[_read("c1"), _read("c2", "b.txt"), _read("c3", "c.txt")]),
        _result("c2", "B"),
        Step(role="user", text="and?"),
    ]
    for card in (OLD, NEW):
        msgs = build_draft(_traj(steps), card, trim=False).messages
        assert [(m["role"], m.get("tool_call_id"), m.get("content")) for m in msgs[3:6]] == [
            ("tool", "c2", "B"),
            ("tool", "c1", "No result provided"),
            ("tool", "c3", "No result provided"),
        ]
        assert msgs[-1]["role"] == "user"  # trim=False keeps what Pi would send before its next request


def test_a_later_turn_after_a_lost_result_is_exact_only_in_a_pi_session() -> None:
    """The synthetic result is what Pi sends; but an agent other than Pi saw the real result, which is lost."""
    steps = [
        Step(role="user", text="go"),
        Step(role="assistant", tool_calls=[_read("c1")]),
        Step(role="assistant", text="done"),
    ]
    rej = to_conversation(_traj(steps), OLD)
    assert isinstance(rej, Rejection) and rej.reason == Reason.missing_tool_result
    assert "next turn was made after seeing one" in rej.detail
    conv = to_conversation(_traj(steps, source="pi"), OLD)
    assert isinstance(conv, Conversation), conv
    assert conv.messages[3] == {"role": "tool", "content": "No result provided", "tool_call_id": "c1"}


def test_an_aborted_turn_is_dropped_and_its_results_answer_nothing() -> None:
    ok = [
        Step(role="user", text="go"),
        Step(role="assistant", text="partial", stop_reason="aborted"),
        Step(role="user", text="again"),
        Step(role="assistant", text="done", stop_reason="stop"),
    ]
    conv = to_conversation(_traj(ok), OLD)
    assert isinstance(conv, Conversation), conv
    assert [m["role"] for m in conv.messages] == ["system", "user", "user", "assistant"]
    with_result = [
        Step(role="user", text="go"),
        Step(role="assistant", tool_calls=[_read("c1")], stop_reason="error"),
        _result("c1", "A"),
        Step(role="assistant", text="done"),
    ]
    rej = to_conversation(_traj(with_result), OLD)
    assert isinstance(rej, Rejection) and rej.reason == Reason.orphan_tool_result


def test_another_models_thinking_is_text_before_1_3_and_dropped_after() -> None:
    steps = [
        Step(role="user", text="go"),
        Step(
            role="assistant",
            text="Answer.",
            reasoning="think",
            meta={"blocks": [["thinking", "think"], ["text", "  "], ["text", "Answer."], ["thinking", " "]]},
        ),
    ]
    for card in (load_card("pi", v) for v in PI_CARD_VERSIONS):
        conv = to_conversation(_traj(steps), card)
        assert isinstance(conv, Conversation), conv
        want = "Answer." if history_rules(card).version >= (1, 3, 0) else "thinkAnswer."
        assert conv.messages[-1] == {"role": "assistant", "content": want}, card.version
    # without kept blocks: the reasoning comes before the text
    plain = [steps[0], Step(role="assistant", text="Answer.", reasoning="think")]
    assert to_conversation(_traj(plain), OLD).messages[-1]["content"] == "thinkAnswer."


@pytest.mark.parametrize(
    ("version", "empty", "blank"),
    [
        ("0.73.1", "(see attached image)", " "),
        ("0.79.10", "(see attached image)", " "),
        ("0.82.0", "(no tool output)", " "),
        ("1.6.0", "(no tool output)", "(no tool output)"),
    ],
)
def test_empty_tool_results_are_worded_by_version(version: str, empty: str, blank: str) -> None:
    rules = history_rules(load_card("pi", version))
    assert rules.tool_content("") == empty
    assert rules.tool_content(" ") == blank
    assert rules.tool_content("", images=1) == "(see attached image)"
    assert rules.tool_content("x") == "x"


def test_user_parts_and_string_content() -> None:
    step = Step(role="user", text="\na", meta={"parts": ["", "a"]})
    for card, parts in ((OLD, ["", "a"]), (NEW, ["a"])):
        msg = build_draft(_traj([step, Step(role="assistant", text="ok")]), card).messages[1]
        assert msg == {"role": "user", "content": [{"type": "text", "text": p} for p in parts]}
    as_string = Step(role="user", text="hi", meta={"content_string": True})
    assert build_draft(_traj([as_string, Step(role="assistant", text="ok")]), OLD).messages[1] == {
        "role": "user",
        "content": "hi",
    }


def test_pipe_ids_are_shortened_as_each_version_does() -> None:
    old, new = history_rules(OLD), history_rules(NEW)
    assert old.call_id("call_A|fc_1") == "call_A" and new.call_id("call_A|fc_1") == "call_A_fc_1"
    long = "call_" + "x" * 30 + "|fc_" + "y" * 60
    assert old.call_id(long) == ("call_" + "x" * 30)[:40]
    got = new.call_id(long)
    assert len(got) == 40 and got.endswith("_" + short_hash(long)[:8]) and got.startswith("call_xxx")
    assert old.call_id("toolu_01") == new.call_id("toolu_01") == "toolu_01"


@pytest.mark.pi
def test_short_hash_is_pi_ais() -> None:
    """Against the installed pi-ai's own ``shortHash`` (run by node)."""
    from harnessfit.harness.pi import install_pi, pi_package_dir

    install_pi("0.82.0")
    hash_js = pi_package_dir("0.82.0").parent / "pi-ai" / "dist" / "utils" / "hash.js"
    texts = ["", "a", "call_1|fc_2", "é𝄞\u2028", "x" * 500]
    script = (
        f"import {{ shortHash }} from {json.dumps(hash_js.as_uri())};"
        f"console.log(JSON.stringify({json.dumps(texts)}.map(shortHash)))"
    )
    cmd = ["node", "--input-type=module", "-e", script]  # the machine's node, which npm installs Pi with
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
    assert json.loads(out) == [short_hash(t) for t in texts]


def test_exports_leave_history_only_messages_unlabelled(tmp_path: Path) -> None:
    steps = [
        Step(role="user", text="summary", meta={"history_only": True}),
        Step(role="assistant", text="kept answer", meta={"history_only": True}),
        Step(role="user", text="next"),
        Step(role="assistant", text="new answer"),
    ]
    conv = to_conversation(_traj(steps), OLD)
    assert isinstance(conv, Conversation) and conv.meta.labels_from == 3
    data = conv.model_dump(mode="json")
    assert [r.action["content"] for r in sft_records(data, "train")] == ["new answer"]
    assert [d.next_turn["content"] for d in decision_points(data, "train")] == ["new answer"]
    fast = ConversationExport(data, "train")
    assert [json.loads(line)["action"] for _, line, _ in fast.sft()] == [{"role": "assistant", "content": "new answer"}]
    assert [row["completion"] for _, _, row in fast.sft()] == [
        [json.dumps({"role": "assistant", "content": "new answer"}, separators=(",", ":"))]
    ]
    assert len(list(fast.decision_points())) == 1
