"""The UI-only drop policy: a call Pi would never see goes with its result only where no later context the model saw
changes beyond that turn; otherwise it blocks, and a build config can change the list or turn dropping off. The
end-of-episode call (SWE-agent's submit) goes only when it is the run's last action."""

from __future__ import annotations

from _helpers.claude_steps import read_steps
from harnessfit.convert import ConvertPolicy, convert_trajectory
from harnessfit.core import Conversation, Provenance, Reason, Rejection, Step, ToolCall, Trajectory
from harnessfit.harness.card import load_card

CARD = load_card("pi", "0.73.1")


def _traj(steps: list[Step], source: str = "claude_code") -> Trajectory:
    return Trajectory(
        id="t",
        source=source,
        steps=steps,
        cwd="/w",
        date="2026-01-02",
        root_request_id="r",
        provenance=Provenance(format=source, file="f.jsonl", sha256="0" * 64),
    )


def _todo(ack: str, is_error: bool = False) -> list[Step]:
    return [
        Step(role="assistant", tool_calls=[ToolCall(id="t1", name="TodoWrite", arguments={"todos": []})]),
        Step(role="tool", tool_call_id="t1", text=ack, is_error=is_error),
    ]


def _read_then_answer(text: str = "Done.") -> list[Step]:
    """An exact action (a Claude Code Read: a Bash result never is) and the answer."""
    return [*read_steps("b1", "ls.txt", "a.py"), Step(role="assistant", text=text)]


def test_a_plain_acknowledgement_alone_in_its_turn_is_dropped() -> None:
    out = convert_trajectory(
        _traj([Step(role="user", text="go"), *_todo("Todos have been modified successfully."), *_read_then_answer()]),
        CARD,
    )
    assert isinstance(out.record, Conversation)
    assert out.calls.fates == ["drop:ui_only:TodoWrite", "label"]
    assert "drop:ui_only:TodoWrite" in out.record.meta.transformations


def test_a_result_quoted_later_or_an_error_blocks_the_drop() -> None:
    quoted = convert_trajectory(
        _traj(
            [
                Step(role="user", text="go"),
                *_todo("Your list id is LIST-0042-ALPHA-BETA"),
                *_read_then_answer("Saved under LIST-0042-ALPHA-BETA, done."),
            ]
        ),
        CARD,
    )
    assert isinstance(quoted.record, Rejection) and quoted.record.reason == Reason.ui_only_call
    assert "quotes its result" in quoted.record.detail
    failed = convert_trajectory(
        _traj([Step(role="user", text="go"), *_todo("InputValidationError", is_error=True), *_read_then_answer()]), CARD
    )
    assert isinstance(failed.record, Rejection) and "error or a refusal" in failed.record.detail


def test_the_list_and_the_switch_come_from_the_policy() -> None:
    steps = [Step(role="user", text="go"), *_todo("Todos have been modified successfully."), *_read_then_answer()]
    off = convert_trajectory(_traj(steps), CARD, policy=ConvertPolicy(drop_ui_tools=False))
    assert isinstance(off.record, Rejection) and off.record.reason == Reason.ui_only_call
    assert "turned off" in off.record.detail
    not_ui = convert_trajectory(_traj(steps), CARD, policy=ConvertPolicy(ui_tools={"claude_code": ["Other"]}))
    assert isinstance(not_ui.record, Rejection) and not_ui.record.reason == Reason.unsupported_tool


def _swe(steps_after_submit: list[Step]) -> Trajectory:
    create = ToolCall(
        id="c", name="str_replace_editor", arguments='{"command": "create", "path": "/r/a.py", "file_text": "x = 1\\n"}'
    )
    submit = ToolCall(id="s", name="submit", arguments="{}")
    return _traj(
        [
            Step(role="user", text="fix it"),
            Step(role="assistant", text="Create it.", tool_calls=[create]),
            Step(role="tool", tool_call_id="c", text="File created successfully at: /r/a.py"),
            Step(role="assistant", text="The fix is in.", tool_calls=[submit]),
            Step(role="tool", tool_call_id="s", text="diff --git a/a.py b/a.py"),
            *steps_after_submit,
        ],
        source="swe_agent",
    )


def test_submit_ends_the_episode_only_as_the_last_action() -> None:
    last = convert_trajectory(_swe([]), CARD)
    assert isinstance(last.record, Conversation), last.record
    assert last.record.messages[-1] == {"role": "assistant", "content": "The fix is in."}
    assert last.calls.fates == ["label", "drop:swe_agent.submit:end-of-episode"]
    review = convert_trajectory(
        _swe([Step(role="user", text="Please review and submit again."), Step(role="assistant", text="Done.")]), CARD
    )
    assert isinstance(review.record, Rejection) and review.record.reason == Reason.ui_only_call
    assert "not the run's last action" in review.record.detail and review.record.labels == 1
