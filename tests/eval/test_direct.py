"""Direct answers (``eval.direct``): the reply rule, the messages, and whole runs against scripted replies whose
outcome is known — the golden plan's files pass every task's own checker, the untouched files fail it."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harnessfit.eval.direct import DIRECT_SYSTEM, DirectResults, direct_messages, files_from_reply, run_direct
from harnessfit.eval.run import default_suite
from harnessfit.eval.sandbox import sandbox_status
from harnessfit.eval.task import load_suite
from harnessfit.harness.scripted import Reply, ScriptedEndpoint
from harnessfit.tasks import get_family
from harnessfit.tasks.check import play_reference
from harnessfit.tasks.generate import generate_tasks

HARNESSFIT = Path(sys.executable).parent / "harnessfit"
BODY = "def f(x):\n    return x + 1\n"


# -- the reply rule ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("heading", "blank", "fence", "tag"),
    list(
        itertools.product(
            ["### a/b.py", "## a/b.py:", "**a/b.py**", "`a/b.py`", "File: a/b.py", "a/b.py"],
            ["", "\n"],
            ["```", "~~~~"],
            ["python", ""],
        )
    ),
)
def test_a_block_belongs_to_the_path_on_the_line_above_it(heading: str, blank: str, fence: str, tag: str) -> None:
    reply = f"Here it is.\n\n{heading}\n{blank}{fence}{tag}\n{BODY}{fence}\n\nDone."
    got = files_from_reply(reply, ["other.py"])
    assert got.files == {"a/b.py": BODY} and got.findings == []


def test_several_files_in_one_reply_and_the_first_of_a_repeated_path() -> None:
    reply = "### one.py\n```\nA = 1\n```\n### two.txt\n```text\nhello\n```\n### one.py\n```\nA = 2\n```\n"
    got = files_from_reply(reply, ["one.py", "two.txt"])
    assert got.files == {"one.py": "A = 1\n", "two.txt": "hello\n"} and got.findings == ["duplicate_path"]


def test_an_unnamed_block_is_the_file_only_when_the_task_names_one_path() -> None:
    reply = "Sure:\n\n```python\nA = 1\n```\n"
    assert files_from_reply(reply, ["settings.py"]).files == {"settings.py": "A = 1\n"}
    assert files_from_reply(reply, ["settings.py"]).findings == ["unnamed_block"]
    two = files_from_reply(reply, ["a.py", "b.py"])
    assert two.files == {} and two.findings == ["no_named_block"]


@pytest.mark.parametrize("path", ["../escape.py", "/etc/passwd", "a/../../b.py", "a\\b.py"])
def test_a_heading_outside_the_folder_is_refused(path: str) -> None:
    got = files_from_reply(f"### {path}\n```\nx\n```\n", ["a.py"])
    assert got.files == {} and got.findings == ["path_outside", "no_named_block"]


def test_a_reply_without_a_block_gives_no_file() -> None:
    got = files_from_reply("def f(): pass", ["a.py"])
    assert got.files == {} and got.findings == ["no_code_block"]


# -- the messages --------------------------------------------------------------------------------------------------
def test_the_messages_hold_the_prompt_and_every_file_under_a_fence_it_cannot_close(tmp_path: Path) -> None:
    task = load_suite(default_suite())[0]
    root = tmp_path / task.id
    shutil.copytree(task.root, root)
    (root / "workspace" / "notes.md").write_text("a ``` fence and ```` four\n", encoding="utf-8")
    (root / "workspace" / "blob.bin").write_bytes(b"\xff\xfe\x00")
    copy = task.model_copy(update={"root": root})
    system, user = direct_messages(copy)
    assert system == {"role": "system", "content": DIRECT_SYSTEM}
    text = user["content"]
    assert text.startswith(task.prompt.rstrip() + "\n\nThe folder holds these files:")
    assert "### notes.md\n`````\na ``` fence and ```` four\n`````" in text
    assert "### blob.bin\n(3 bytes, not text)" in text
    for path in (root / "workspace").rglob("*.py"):
        rel = path.relative_to(root / "workspace").as_posix()
        assert f"### {rel}\n```\n{path.read_text(encoding='utf-8').rstrip(chr(10))}\n```" in text
    # the rule reads its own file layout back: what the model is shown is what a faithful reply looks like
    shown = files_from_reply(text.partition("The folder holds these files:")[2], [])
    assert shown.files["notes.md"] == "a ``` fence and ```` four\n"


# -- whole runs ----------------------------------------------------------------------------------------------------
def _suite(tmp_path: Path) -> Path:
    fams = [get_family(f) for f in ("edit_constant", "create_module", "fix_off_by_one", "rename_across_files")]
    generate_tasks(fams, tmp_path / "suite", n=2, seed=3, check=False)
    return tmp_path / "suite"


def _replier(suite: Path, tmp_path: Path, *, golden: bool):
    """A scripted model that answers each task with its golden plan's changed files, or with its files unchanged."""
    replies: dict[str, str] = {}
    for task in load_suite(suite):
        ws = tmp_path / "played" / task.id
        if task.workspace_dir.is_dir():
            shutil.copytree(task.workspace_dir, ws)
        else:
            ws.mkdir(parents=True)
        if golden:
            play_reference(task, ws)
        parts = []
        for path in sorted(p for p in ws.rglob("*") if p.is_file()):
            rel = path.relative_to(ws).as_posix()
            before = task.workspace_dir / rel
            if not golden or not before.is_file() or before.read_bytes() != path.read_bytes():
                parts.append(f"### {rel}\n```\n{path.read_text(encoding='utf-8')}```\n")
        replies[task.prompt.rstrip()] = "\n".join(parts) or "Nothing to change."

    def respond(body: dict, index: int) -> Reply:
        assert "tools" not in body and body["messages"][0]["content"] == DIRECT_SYSTEM
        user = body["messages"][1]["content"]
        return Reply(text=next(r for p, r in replies.items() if user.startswith(p)))

    return respond


@pytest.mark.parametrize("golden", [True, False])
def test_the_checker_judges_the_files_of_the_reply(tmp_path: Path, golden: bool) -> None:
    suite = _suite(tmp_path)
    sandbox = sandbox_status() == "bwrap"
    res = run_direct(
        "replier",
        suite,
        tmp_path / "out",
        responder=_replier(suite, tmp_path, golden=golden),
        sandbox=sandbox,
        progress=False,
    )
    agg = res.aggregates
    assert res.status == "success" and res.kind == "direct" and agg["answers"] == agg["scored"] == 8
    passed = {a.task_id: a.checker_exit_code == 0 for a in res.answers}
    if golden:
        assert all(passed.values()), res.answers
        assert agg["rates"]["checker_passed"]["successes"] == 8 and agg["rates"]["expected_change"]["successes"] == 8
        assert set(agg["per_family"]) == {"edit_constant", "create_module", "fix_off_by_one", "rename_across_files"}
    else:
        assert not any(passed.values()), res.answers
    first = res.answers[0]
    judged = tmp_path / "out" / "answers" / first.task_id / "seed-0"
    assert (judged / "checker.txt").is_file() and (judged / "workspace").is_dir()
    again = DirectResults.load(tmp_path / "out")
    assert again.aggregates == agg and again.config["sandbox"] == ("bwrap" if sandbox else "none (--no-sandbox)")


def test_unscored_answers_and_escaped_markdown(tmp_path: Path) -> None:
    suite = _suite(tmp_path)

    def respond(body: dict, index: int) -> Reply:
        if index == 0:
            return Reply(error="overloaded", status=500)
        return Reply(text="### <b>x</b>.py\n```\nprint(1)\n```\n")

    res = run_direct("x", suite, tmp_path / "out", responder=respond, sandbox=False, progress=False)
    agg = res.aggregates
    assert (agg["answers"], agg["scored"], agg["unscored"]) == (8, 7, 1)
    assert agg["rates"]["checker_passed"]["successes"] == 0 and agg["rates"]["gave_a_file"]["successes"] == 7
    md = (tmp_path / "out" / "results.md").read_text(encoding="utf-8")
    assert "<b>" not in md and "\\<b\\>x\\</b\\>.py" in md


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    cli = [str(HARNESSFIT), "eval", "direct", "--suite", str(default_suite())]
    both = subprocess.run([*cli, "--model", "a", "--endpoint", "http://127.0.0.1:9/v1"], capture_output=True, text=True)
    assert both.returncode == 2 and "give exactly one of --model SPEC or --endpoint URL" in both.stderr
    assert "Traceback" not in both.stderr
    seeds = subprocess.run([*cli, "--model", "a", "--seeds", "2", "--temperature", "0"], capture_output=True, text=True)
    assert seeds.returncode == 2 and "raise the temperature" in seeds.stderr and "Traceback" not in seeds.stderr


@pytest.mark.slow  # serves nothing: a scripted endpoint, the CLI in a child process
def test_cli_against_a_running_endpoint(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    with ScriptedEndpoint(_replier(suite, tmp_path, golden=True), model_id="golden") as ep:
        proc = subprocess.run(
            [
                str(HARNESSFIT),
                "eval",
                "direct",
                "--endpoint",
                ep.base_url,
                "--suite",
                str(suite),
                "--no-sandbox",
                "--out",
                str(tmp_path / "out"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr
    assert "checker passed 8/8" in proc.stdout
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["kind"] == "direct" and data["status"] == "success"


def test_a_reply_never_writes_through_a_link_in_the_folder(tmp_path: Path) -> None:
    task = load_suite(default_suite())[0]
    suite = tmp_path / "suite"
    shutil.copytree(task.root, suite / task.id)
    outside = tmp_path / "outside"
    outside.mkdir()
    (suite / task.id / "workspace" / "linked").symlink_to(outside, target_is_directory=True)

    def respond(body: dict, index: int) -> Reply:
        return Reply(text="### linked/pwned.py\n```\nprint(1)\n```\n")

    res = run_direct("x", suite, tmp_path / "out", responder=respond, sandbox=False, progress=False)
    assert res.answers[0].files == ["linked/pwned.py"] and list(outside.iterdir()) == []
    judged = tmp_path / "out" / "answers" / task.id / "seed-0" / "workspace" / "linked"
    assert judged.is_dir() and not judged.is_symlink() and (judged / "pwned.py").read_text() == "print(1)\n"


@pytest.mark.slow  # serves the embedded model (about 30 s)
def test_the_embedded_model_answers_and_is_judged(tmp_path: Path) -> None:
    task = load_suite(default_suite())[0]
    res = run_direct(
        "smollm2-135m",
        default_suite(),
        tmp_path / "out",
        task_ids=[task.id],
        max_tokens=48,
        sandbox=False,
        progress=False,
    )
    answer = res.answers[0]
    assert res.status == "success" and answer.status == "success" and answer.reply
    assert answer.scored and answer.checker_exit_code is not None and answer.finish_reason in ("stop", "length")
    assert res.model["name"] == "smollm2-135m" and res.aggregates["scored"] == 1
    assert "adapter" not in res.model  # a served adapter is named beside the model (`smollm2-135m + train/adapter`)
