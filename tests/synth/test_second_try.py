"""Second-try sessions through the real Pi: the solver's first change applies but is wrong (the golden plan's decoy),
the validation fails in the task's own words, the file is read again and exactly the wrong lines are repaired; the
kept copy marks the decoy context only, so the build learns the validation, the re-read and the repair, never the
wrong change."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.convert import convert_trajectory
from harnessfit.core import Conversation, Reason
from harnessfit.eval import run_eval
from harnessfit.eval.task import load_suite, repair_edit
from harnessfit.formats.pi.entries import CONTEXT_ONLY_ENTRY
from harnessfit.formats.pi.reader import PiReader
from harnessfit.harness.card import load_card
from harnessfit.harness.pi import DEFAULT_PI_VERSION
from harnessfit.synth import synth
from harnessfit.synth.targeting import target_from_eval
from harnessfit.tasks import get_family
from harnessfit.tasks.generate import generate_tasks

pytestmark = [pytest.mark.pi, pytest.mark.slow]

_FAMILIES = ("fix_off_by_one", "fix_name_error", "fix_return_value", "create_module")


def _convert(path: Path, card) -> Conversation:
    (traj,) = list(PiReader().read(path))
    conv = convert_trajectory(traj, card)
    assert isinstance(conv.record, Conversation), conv.record
    return conv


def _args(message: dict) -> dict:
    (call,) = message["tool_calls"]
    return {"name": call["function"]["name"], **orjson.loads(call["function"]["arguments"])}


def test_second_try_sessions_keep_the_decoy_as_context_only(pi_installed, tmp_path: Path) -> None:
    generate_tasks([get_family(f) for f in _FAMILIES], tmp_path / "suite", n=2, seed=5)
    tasks = {t.id: t for t in load_suite(tmp_path / "suite")}
    manifest = synth(tmp_path / "suite", tmp_path / "synth", contrast=False, second_try=True, progress=False)
    assert manifest["skipped"] == []
    kinds = {k: {f["task"] for f in manifest["files"] if f["kind"] == k} for k in ("golden", "second-try")}
    assert len(kinds["golden"]) == 8 and kinds["second-try"] == kinds["golden"]  # every family here has a decoy
    card = load_card("pi", DEFAULT_PI_VERSION)
    for f in manifest["files"]:
        if f["kind"] != "second-try":
            continue
        task = tasks[f["task"]]
        step = next(s for s in task.reference if s.decoy is not None)
        path = tmp_path / "synth" / f["path"]
        rows = [orjson.loads(x) for x in path.read_bytes().splitlines() if x.strip()]
        (marker,) = [r for r in rows if r.get("customType") == CONTEXT_ONLY_ENTRY]
        decoy = next(r for r in rows if r.get("id") == marker["data"]["targetId"])
        (call,) = [p for p in decoy["message"]["content"] if p["type"] == "toolCall"]
        assert call["arguments"] == step.decoy  # the decoy, as the golden plan states it
        second = _convert(path, card)
        golden = _convert(tmp_path / "synth" / "sessions" / "golden" / path.name, card)
        msgs = second.record.messages
        (k,) = second.record.meta.context_only
        assert second.calls.fates.count(Reason.marked_context_only.value) == 1
        assert msgs[k + 1]["role"] == "tool" and "Success" in msgs[k + 1]["content"]  # Pi applied it
        # the labels after it: the validation (it fails), the file read again, the repair of the wrong lines
        assert _args(msgs[k + 2]) == {"name": "bash", "command": task.validation_command}
        assert "Command exited with code" in msgs[k + 3]["content"]
        assert _args(msgs[k + 4]) == {"name": "read", "path": step.args["path"]}
        wrong, right = step.decoy_texts()
        old, new = repair_edit(wrong, right, msgs[k + 5]["content"])
        repair = _args(msgs[k + 6])
        assert repair == {"name": "edit", "path": step.args["path"], "edits": [{"oldText": old, "newText": new}]}
        assert old in wrong and new in right
        if step.tool == "write":  # only the wrong lines, not the new file again
            assert old.count("\n") < wrong.count("\n")
        # then what the golden session does after its own change; the repair stands for the golden change, the
        # validation and the re-read before it are the two labels more
        assert second.calls.labels == golden.calls.labels + 2
        assert msgs[-1]["content"] == golden.record.messages[-1]["content"]


def test_a_failed_call_sent_again_turns_on_the_second_try_sessions(pi_installed, tmp_path: Path) -> None:
    """A model whose validation call Pi refused sends it again with nothing changed between: the eval shows
    ``repeated_failed_call``, and `synth --from-eval` records second-try sessions without being asked."""
    generate_tasks([get_family("fix_return_value"), get_family("edit_constant")], tmp_path / "suite", n=2, seed=3)
    one = [p.name for p in sorted((tmp_path / "suite").iterdir()) if p.name.startswith("fix_return_value")][:1]
    # every call double-encoded: Pi refuses the validation, the read, the edit, then the same validation again
    run_eval("scripted:double-encode", tmp_path / "suite", tmp_path / "eval", task_ids=one, progress=False)
    targeting = target_from_eval(tmp_path / "eval", ["fix_return_value", "edit_constant"])
    assert targeting.failures["repeated_failed_call"] == 1
    assert targeting.variants["second-try"] == ["repeated_failed_call"]
    out = tmp_path / "synth"
    args = ["synth", "--suite", str(tmp_path / "suite"), "--out", str(out), "--from-eval", str(tmp_path / "eval")]
    res = CliRunner().invoke(app, [*args, "--limit", "3", "--no-contrast", "--no-retry"])
    assert res.exit_code == 0, res.output
    assert "second-try sessions: on (repeated_failed_call)" in res.output
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    second = {f["task"] for f in manifest["files"] if f["kind"] == "second-try"}
    golden = {f["task"] for f in manifest["files"] if f["kind"] == "golden"}
    # edit_constant has no decoy: only the fix_return_value tasks get a second try
    assert second == {t for t in golden if t.startswith("fix_return_value")} and second
