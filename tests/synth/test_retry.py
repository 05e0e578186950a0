"""Retry sessions through the real Pi: the mis-edit solver's first edit fails in Pi's own words, the kept copy marks
that turn context only, and the build learns the exact edit after the failure and never the mistake."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.convert import convert_trajectory
from harnessfit.core import Conversation, Reason
from harnessfit.eval import run_eval
from harnessfit.formats.pi.entries import CONTEXT_ONLY_ENTRY
from harnessfit.formats.pi.reader import PiReader
from harnessfit.harness.card import load_card
from harnessfit.harness.pi import DEFAULT_PI_VERSION
from harnessfit.report.sections.synth import section
from harnessfit.synth import synth
from harnessfit.synth.targeting import target_from_eval
from harnessfit.tasks import get_family
from harnessfit.tasks.generate import generate_tasks

pytestmark = [pytest.mark.pi, pytest.mark.slow]


def _convert(path: Path, card):
    (traj,) = list(PiReader().read(path))
    return convert_trajectory(traj, card)


def _without_ids(messages: list[dict]) -> str:
    text = orjson.dumps(messages).decode()
    return re.sub(r'"(id|tool_call_id)":"call_[0-9_]+"', "", text)


def test_retry_sessions_keep_the_failed_edit_as_context_only(pi_installed, tmp_path: Path) -> None:
    fams = [get_family(f) for f in ("edit_string", "rename_across_files", "create_module")]
    generate_tasks(fams, tmp_path / "suite", n=2, seed=4)
    manifest = synth(tmp_path / "suite", tmp_path / "synth", contrast=False, retry=True, progress=False)
    assert manifest["skipped"] == []
    by_kind: dict[str, set[str]] = {}
    for f in manifest["files"]:
        by_kind.setdefault(f["kind"], set()).add(f["task"])
    # every task has a golden session and a retry session (an edit gone wrong, or a file created with `edit`)
    assert len(by_kind["golden"]) == 6
    assert by_kind["retry"] == by_kind["golden"]
    card = load_card("pi", DEFAULT_PI_VERSION)
    mistakes = set()
    for f in manifest["files"]:
        if f["kind"] != "retry":
            continue
        path = tmp_path / "synth" / f["path"]
        rows = [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
        (marker,) = [r for r in rows if r.get("customType") == CONTEXT_ONLY_ENTRY]
        planted = next(r for r in rows if r.get("id") == marker["data"]["targetId"])
        (call,) = [p for p in planted["message"]["content"] if p["type"] == "toolCall"]
        answer = next(
            r["message"] for r in rows if r["type"] == "message" and r["message"].get("toolCallId") == call["id"]
        )
        assert call["name"] == "edit" and answer["isError"]
        text = answer["content"][0]["text"]
        retry = _convert(path, card)
        golden = _convert(tmp_path / "synth" / "sessions" / "golden" / path.name, card)
        if f["task"].startswith("create_module"):
            # a create task: an `edit` of the file that is not there yet, Pi's error, then the golden write
            (edit,) = call["arguments"]["edits"]
            assert text == f"Could not edit file: {call['arguments']['path']}. Error code: ENOENT."
            write = _check_retry(retry, golden, text, then="write", added=0)
            assert orjson.loads(write["function"]["arguments"])["content"] == edit["newText"] and edit["oldText"] == ""
            mistakes.add("Could not edit")
            continue
        mistakes.add(text.split(" ")[0])
        assert text.startswith(("Could not find the exact text in", "No changes made to"))
        # an edit task: then a re-read of the file (a label) before the golden session's exact edit
        reread = _check_retry(retry, golden, text, then="read", added=1)
        assert orjson.loads(reread["function"]["arguments"]) == {"path": call["arguments"]["path"]}
    # the three mistakes: text not found, an edit that changes nothing, a new file sent to `edit`
    assert mistakes == {"Could", "No", "Could not edit"}


def _check_retry(retry, golden, text: str, *, then: str, added: int) -> dict:
    """The planted edit and Pi's error ``text`` are on the wire, context only; the call after them is to ``then``;
    the retry has ``added`` labelled calls more than its golden twin, right after the error, and is otherwise the
    golden session (call ids aside: the endpoint numbers them by turn). Returns the call after the error."""
    assert isinstance(retry.record, Conversation) and isinstance(golden.record, Conversation), retry.record
    (k,) = retry.record.meta.context_only
    assert retry.record.messages[k]["tool_calls"][0]["function"]["name"] == "edit"
    assert retry.record.messages[k + 1]["content"] == text
    (after,) = retry.record.messages[k + 2]["tool_calls"]
    assert after["function"]["name"] == then
    assert retry.calls.fates.count(Reason.marked_context_only.value) == 1
    assert retry.calls.labels == golden.calls.labels + added
    rest = [m for i, m in enumerate(retry.record.messages) if i not in range(k, k + 2 + 2 * added)]
    assert _without_ids(rest) == _without_ids(golden.record.messages)
    return after


def test_an_edit_pi_could_not_apply_turns_on_the_retry_sessions(pi_installed, tmp_path: Path) -> None:
    """`synth --from-eval` reads the failed edit from the eval run (Pi's tool error on an edit) and records retry
    sessions without being asked; the manifest and the report say which failure asked for them."""
    generate_tasks([get_family("edit_constant"), get_family("create_module")], tmp_path / "suite", n=2, seed=3)
    one = [p.name for p in sorted((tmp_path / "suite").iterdir()) if p.name.startswith("edit_constant")][:1]
    # read, then the failed edit, then the turn cap: the episode shows an edit Pi could not apply
    run_eval("scripted:mis-edit", tmp_path / "suite", tmp_path / "eval", task_ids=one, max_turns=2, progress=False)
    targeting = target_from_eval(tmp_path / "eval", ["edit_constant", "create_module"])
    assert targeting.failures["failed_edit"] == 1 and targeting.variants == {"retry": ["failed_edit"]}
    assert targeting.weights["edit_constant"] > targeting.weights["create_module"]
    out = tmp_path / "synth"
    args = ["synth", "--suite", str(tmp_path / "suite"), "--out", str(out), "--from-eval", str(tmp_path / "eval")]
    res = CliRunner().invoke(app, [*args, "--limit", "3", "--no-contrast"])
    assert res.exit_code == 0, res.output
    assert "retry sessions: on (failed_edit)" in res.output
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    assert manifest["notes"]["targeting"]["variants"] == {"retry": ["failed_edit"]}
    retry = {f["task"] for f in manifest["files"] if f["kind"] == "retry"}
    golden = {f["task"] for f in manifest["files"] if f["kind"] == "golden"}
    assert retry == golden and any(t.startswith("edit_constant") for t in retry)  # create tasks have one too
    assert "recorded because of: failed_edit" in section(tmp_path).body
    # asked not to, it records none
    res = CliRunner().invoke(
        app, [*args[:4], str(tmp_path / "s2"), *args[5:], "--limit", "3", "--no-contrast", "--no-retry"]
    )
    assert res.exit_code == 0, res.output
    assert {f["kind"] for f in orjson.loads((tmp_path / "s2" / "manifest.json").read_bytes())["files"]} == {"golden"}
