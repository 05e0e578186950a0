"""Scorers read only the episode files: a hand-written Pi v3 session exercises the validity reasons."""

from __future__ import annotations

from pathlib import Path

from _helpers.episodes import recorded_episode
from harnessfit.eval.scorers import load_card_or_none, score_episode
from harnessfit.eval.task import load_task


def _assistant(calls=(), text=None, stop="toolUse"):
    content = ([{"type": "text", "text": text}] if text else []) + [
        {"type": "toolCall", "id": cid, "name": name, "arguments": args} for cid, name, args in calls
    ]
    return {
        "role": "assistant",
        "content": content,
        "stopReason": stop,
        "usage": {"input": 100, "output": 10, "totalTokens": 110},
    }


def _result(cid, name, text, is_error):
    return {
        "role": "toolResult",
        "toolCallId": cid,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": is_error,
    }


def test_scores_invalid_calls_and_final_answer(tmp_path: Path, default_suite: Path):
    task = load_task(default_suite / "edit_greeting")
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": task.prompt}]},
        _assistant([("c1", "grep", {"pattern": "Hello"})]),
        _result("c1", "grep", "Tool grep not found", True),
        _assistant([("c2", "edit", {"file_path": "greet.py", "old_string": "a", "new_string": "b"})]),
        _result("c2", "edit", 'Validation failed for tool "edit":\n  - path: must have required property', True),
        _assistant([("c3", "read", '{"path":"greet.py"}')]),
        _result("c3", "read", 'Validation failed for tool "read":\n  - root: must be object', True),
        _assistant([("c4", "bash", {"command": "python3  check_greet.py"})]),
        _result("c4", "bash", "FAIL\n\nCommand exited with code 1", True),
        _assistant(text="I could not finish.", stop="stop"),
    ]
    facts = recorded_episode(tmp_path, task.id, msgs, expected_change=False, checker_exit_code=1)
    card = load_card_or_none()
    m = score_episode(facts, task, tmp_path, card)
    assert m.tool_calls_total == 4 and m.tool_calls_valid == 1 and m.tool_calls_invalid == 3
    assert m.invalid_by_reason["unknown_tool"] == 1
    assert m.invalid_by_reason["arguments_double_encoded"] == 1 and m.double_encoded_arguments == 1
    assert m.invalid_by_reason["pi_validation_failed"] == 2
    if card is not None:  # the card's validator names the Claude-style edit's problems too
        assert any(k in m.invalid_by_reason for k in ("missing_required", "unexpected_property"))
    assert m.pi_tool_errors == {"bash": 1}  # a valid call whose command failed
    assert m.validation_used  # whitespace-normalised match of the requested command
    assert m.finished_with_response and not m.complete_loop
    assert m.failure == "double_encoded_arguments"
    assert m.turns == 5 and m.tokens_total == 550 and m.stop_reason == "stop"


def _score(tmp_path: Path, task, msgs, checker_exit_code=0, expected_change=True):
    facts = recorded_episode(
        tmp_path, task.id, msgs, expected_change=expected_change, checker_exit_code=checker_exit_code
    )
    return score_episode(facts, task, tmp_path, load_card_or_none())


def test_a_call_the_endpoint_could_not_parse_is_an_invalid_call_and_no_answer(tmp_path: Path, default_suite: Path):
    """The endpoint leaves a <tool_call> block that does not parse in the reply's text (what the model wrote): the
    model tried a call, so it counts as an invalid call, and a final "answer" that is such a block is no answer."""
    task = load_task(default_suite / "edit_greeting")
    broken = '<tool_call>\n{"name": "edit", "arguments": {"path": "greet.py", "edits": [{"oldText": "a"}}\n</tool_call>'
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": task.prompt}]},
        _assistant([("c1", "read", {"path": "greet.py"})]),
        _result("c1", "read", "print('Hello')\n", False),
        _assistant(text=broken, stop="stop"),
    ]
    m = _score(tmp_path, task, msgs, checker_exit_code=1, expected_change=False)
    assert (m.tool_calls_total, m.tool_calls_valid, m.tool_calls_invalid) == (2, 1, 1)
    assert m.invalid_by_reason == {"malformed_tool_call": 1}
    assert not m.finished_with_response and m.failure == "invalid_tool_calls"
    # the same episode answered in words after a successful edit is a complete loop, with no malformed call
    msgs[-1] = _assistant(text="Done: greet.py now says hello to the user.", stop="stop")
    m = _score(tmp_path, task, msgs)
    assert m.tool_calls_total == 1 and m.tool_calls_invalid == 0 and m.invalid_by_reason == {}
    assert m.finished_with_response and m.complete_loop


def test_a_failed_call_sent_again_with_the_files_unchanged_is_a_repeat(tmp_path: Path, default_suite: Path):
    """Same tool, same arguments, after Pi refused it or could not run it, with no successful edit or write between:
    a repeat. Re-running the failing check after an edit that worked is the loop doing its job, not a repeat."""
    task = load_task(default_suite / "edit_greeting")
    miss = {"path": "greet.py", "edits": [{"oldText": "Hi", "newText": "Hey"}]}
    check = {"command": "python3 check_greet.py"}
    no_match = "Could not find the exact text in greet.py. The old text must match exactly including all whitespace."

    def episode(*steps):
        msgs = [{"role": "user", "content": [{"type": "text", "text": task.prompt}]}]
        for i, (name, args, text, err) in enumerate(steps):
            msgs += [_assistant([(f"c{i}", name, args)]), _result(f"c{i}", name, text, err)]
        msgs.append(_assistant(text="Stopped.", stop="stop"))
        return _score(tmp_path, task, msgs, checker_exit_code=1, expected_change=False)

    failed_edit = ("edit", miss, no_match, True)
    read = ("read", {"path": "greet.py"}, 'def greet(name):\n    return "Hello, " + name + "!"\n', False)
    assert episode(failed_edit, read, failed_edit).repeated_failed_call  # a re-read changes no file
    refused = (
        "edit",
        {"path": "greet.py", "content": "x"},
        'Validation failed for tool "edit":\n  - edits: missing',
        True,
    )
    assert episode(refused, refused).repeated_failed_call
    fail_check = ("bash", check, "FAIL\n\nCommand exited with code 1", True)
    fixed = (
        "edit",
        {**miss, "edits": [{"oldText": "Hello", "newText": "Hey"}]},
        "Successfully replaced 1 block(s)",
        False,
    )
    assert episode(fail_check, fail_check).repeated_failed_call
    assert not episode(fail_check, fixed, fail_check).repeated_failed_call
    assert not episode(failed_edit, read, fixed).repeated_failed_call  # a different call after the error
