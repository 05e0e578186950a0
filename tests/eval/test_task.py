import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from harnessfit.errors import UserError
from harnessfit.eval.task import TaskKind, load_suite, load_task


def test_default_suite_has_three_tasks_per_kind(default_suite):
    tasks = load_suite(default_suite)
    assert len(tasks) >= 9
    kinds = Counter(t.kind for t in tasks)
    assert all(kinds[k] >= 3 for k in TaskKind)
    for t in tasks:
        assert t.validation_command in t.prompt
        assert t.reference[-1].final
        assert (t.workspace_dir.is_dir() or t.kind == TaskKind.create) and t.checker_dir.is_dir()


@pytest.mark.slow
def test_checker_fails_on_untouched_fixture(default_suite, tmp_path):
    """The independent checker must be able to fail: it fails before the agent did anything."""
    for t in load_suite(default_suite):
        ws = tmp_path / t.id
        ws.mkdir()
        if t.workspace_dir.is_dir():
            shutil.copytree(t.workspace_dir, ws, dirs_exist_ok=True)
        assert not all(c.holds(ws) for c in t.expected_change), t.id
        shutil.copytree(t.checker_dir, ws, dirs_exist_ok=True)
        proc = subprocess.run(["bash", "-c", t.checker.command], cwd=ws, capture_output=True)
        assert proc.returncode != 0, t.id


def _copy_task(default_suite: Path, tmp_path: Path, name: str = "edit_greeting") -> Path:
    dst = tmp_path / "suite" / name
    shutil.copytree(default_suite / name, dst)
    return dst


def test_missing_yaml(tmp_path):
    with pytest.raises(UserError, match="missing"):
        load_task(tmp_path)


def test_bad_yaml(default_suite, tmp_path):
    d = _copy_task(default_suite, tmp_path)
    (d / "task.yaml").write_text("kind: [edit\n")
    with pytest.raises(UserError, match="not valid YAML"):
        load_task(d)


def test_prompt_must_name_validation_command(default_suite, tmp_path):
    d = _copy_task(default_suite, tmp_path)
    text = (
        (d / "task.yaml")
        .read_text()
        .replace("validation_command: python3 check_greet.py", "validation_command: python3 other.py")
    )
    (d / "task.yaml").write_text(text)
    with pytest.raises(UserError, match="validation command"):
        load_task(d)


def test_unknown_field_and_bad_kind(default_suite, tmp_path):
    d = _copy_task(default_suite, tmp_path)
    base = (d / "task.yaml").read_text()
    (d / "task.yaml").write_text(base + "surprise: 1\n")
    with pytest.raises(UserError, match="surprise"):
        load_task(d)
    (d / "task.yaml").write_text(base.replace("kind: edit", "kind: refactor"))
    with pytest.raises(UserError, match="kind"):
        load_task(d)


def test_reference_must_end_with_final(default_suite, tmp_path):
    d = _copy_task(default_suite, tmp_path)
    text = (d / "task.yaml").read_text()
    cut = text[: text.index("  - final:")]
    (d / "task.yaml").write_text(cut)
    with pytest.raises(UserError, match="final answer"):
        load_task(d)


def test_missing_checker_folder_and_empty_suite(default_suite, tmp_path):
    d = _copy_task(default_suite, tmp_path)
    shutil.rmtree(d / "checker")
    with pytest.raises(UserError, match="checker/"):
        load_task(d)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match="no tasks"):
        load_suite(empty)
    with pytest.raises(UserError, match="not found"):
        load_suite(tmp_path / "nope")


def test_expected_change_never_reads_through_links_or_blocks_on_fifos(default_suite, tmp_path):
    """Item 1: the predicate reads only regular files inside the workspace: a link to an outside file does not count
    as the file, and a FIFO planted under the expected name is not opened (opening it would block forever)."""
    import os
    import threading

    task = load_task(default_suite / "create_hello_script")  # expected change: hello.py exists
    outside = tmp_path / "outside.py"
    outside.write_text('print("hello world")\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.py").symlink_to(outside)
    assert not any(c.holds(ws) for c in task.expected_change)

    edit = load_task(default_suite / "edit_greeting")  # expected change: greet.py contains '"Hi, "'
    (tmp_path / "secret.py").write_text('"Hi, "\n')
    (ws / "greet.py").symlink_to(tmp_path / "secret.py")
    assert not any(c.holds(ws) for c in edit.expected_change)
    sub = ws / "pkg"
    sub.symlink_to(tmp_path)  # a linked folder on the way to the file
    from harnessfit.eval.task import ExpectedChange

    assert not ExpectedChange(path="pkg/secret.py", contains="Hi").holds(ws)

    (ws / "greet.py").unlink()
    os.mkfifo(ws / "greet.py")
    verdict: list[bool] = []
    worker = threading.Thread(target=lambda: verdict.append(edit.expected_change[0].holds(ws)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert verdict == [False], "holds() blocked on a FIFO or accepted it"


def test_python_checker_must_run_isolated(default_suite, tmp_path):
    """Item 4: a checker run as plain ``python3 hf_check.py`` puts the agent's workspace first on sys.path."""
    d = _copy_task(default_suite, tmp_path)
    spec = d / "task.yaml"
    spec.write_text(spec.read_text().replace("command: python3 -I hf_check.py", "command: python3 hf_check.py"))
    with pytest.raises(UserError, match="python3 -I"):
        load_task(d)


@pytest.mark.parametrize(
    "command",
    [
        "timeout 20 python3 hf_check.py",
        "cd . && python3 hf_check.py",
        "python3 -I a.py; python3 hf_check.py",
        "/usr/bin/python3.11 hf_check.py",
        "env X=1 python hf_check.py",
    ],
)
def test_every_python_in_a_checker_command_must_run_isolated(command):
    """Issue 27 item 3: the rule holds wherever Python stands in the command, not only as its first word."""
    from pydantic import ValidationError

    from harnessfit.eval.task import Checker

    with pytest.raises(ValidationError, match="python3 -I"):
        Checker(command=command)


@pytest.mark.parametrize(
    "command",
    [
        "python3 -I hf_check.py",
        "timeout 20 python3 -I hf_check.py",
        "bash hf_run.sh",
        "node check.mjs",
        "pytest -q",
        "python3 -IB x.py",
    ],
)
def test_isolated_or_non_python_checkers_load(command):
    from harnessfit.eval.task import Checker

    assert Checker(command=command).command == command


def test_a_decoy_is_the_same_call_gone_wrong():
    from pydantic import ValidationError

    from harnessfit.eval.task import ReferenceStep

    edit = {"path": "m.py", "edits": [{"oldText": "a < b", "newText": "a <= b"}]}
    step = ReferenceStep(
        tool="edit", args=edit, decoy={"path": "m.py", "edits": [{"oldText": "a < b", "newText": "a > b"}]}
    )
    assert step.decoy_texts() == ("a > b", "a <= b")
    write = ReferenceStep(
        tool="write", args={"path": "n.py", "content": "x = 1\n"}, decoy={"path": "n.py", "content": "x = 2\n"}
    )
    assert write.decoy_texts() == ("x = 2\n", "x = 1\n")
    bad = [
        ("edit", edit, {"path": "other.py", "edits": [{"oldText": "a < b", "newText": "a > b"}]}),  # another file
        ("edit", edit, {"path": "m.py", "edits": [{"oldText": "a", "newText": "a > b"}]}),  # another oldText
        ("edit", edit, edit),  # the step itself
        ("bash", {"command": "true"}, {"command": "false"}),  # only an edit or a write
    ]
    for tool, args, decoy in bad:
        with pytest.raises(ValidationError, match="decoy"):
            ReferenceStep(tool=tool, args=args, decoy=decoy)


@pytest.mark.parametrize(
    ("wrong", "right", "current", "want"),
    [
        # one line differs: that line, without the newline both share
        (
            "def f(n):\n    return n - 1\n",
            "def f(n):\n    return n + 1\n",
            "def f(n):\n    return n - 1\n",
            ("    return n - 1", "    return n + 1"),
        ),
        # a fragment inside a line: the fragment
        (
            "trim(text)",
            "_trim(text)",
            'def g(text):\n    return "<" + trim(text) + ">"\n',
            ("trim(text)", "_trim(text)"),
        ),
        # the differing line is not unique in the file: widened until it is
        ("a\nb\nc\n", "a\nB\nc\n", "b\na\nb\nc\n", ("a\nb", "a\nB")),
        # a line added
        ("a\nb\n", "a\nb\nc\n", "a\nb\n", ("b", "b\nc")),
    ],
)
def test_the_repair_edits_only_the_wrong_lines(wrong, right, current, want):
    from harnessfit.eval.task import repair_edit

    old, new = repair_edit(wrong, right, current)
    assert (old, new) == want
    assert current.count(old) == 1 and current.replace(old, new) == current.replace(wrong, right)
