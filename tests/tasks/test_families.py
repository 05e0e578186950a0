"""Task families: enough distinct instances, every golden plan sound, held-out families apart, the CLI's lines."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.errors import UserError
from harnessfit.eval.task import load_suite, suite_families
from harnessfit.tasks import families_in, get_family
from harnessfit.tasks.check import TaskProblem, check_task
from harnessfit.tasks.generate import generate_tasks


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(folder).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def test_families_cover_the_kinds_and_split_apart() -> None:
    train, held = families_in("train"), families_in("heldout")
    assert len(train) >= 12 and len(held) >= 3
    assert {f.name for f in train}.isdisjoint({f.name for f in held})
    for split in (train, held):
        assert {f.kind.value for f in split} == {"edit", "recover", "create"}


def test_five_hundred_distinct_training_instances(tmp_path: Path) -> None:
    train = families_in("train")
    n = -(-500 // len(train))
    manifest = generate_tasks(train, tmp_path / "suite", n=n, seed=11, check=False)
    tasks = load_suite(tmp_path / "suite")  # every folder obeys the task loader's rules
    assert len(tasks) == len(manifest["tasks"]) >= 500
    assert len({t.prompt for t in tasks}) == len(tasks)  # no two instances ask the same thing
    assert len({t.fingerprint() for t in tasks}) == len(tasks)
    assert {s for _, s in suite_families(tmp_path / "suite").values()} == {"train"}


@pytest.mark.parametrize("fam", [f.name for f in families_in()])
def test_every_golden_plan_passes_and_the_untouched_workspace_fails(fam: str, tmp_path: Path) -> None:
    generate_tasks([get_family(fam)], tmp_path / "suite", n=4, seed=5, check=True)  # check_task on each


def test_the_check_catches_an_unsound_task(tmp_path: Path) -> None:
    generate_tasks([get_family("edit_constant")], tmp_path / "s", n=1, seed=0, check=False)
    task = load_suite(tmp_path / "s")[0]
    (task.root / "checker" / "hf_check.py").write_text("print('always passes')\n")
    with pytest.raises(TaskProblem, match="passes on the untouched workspace"):
        check_task(task)


def test_per_kind_counts_give_each_kind_the_same_share(tmp_path: Path) -> None:
    from harnessfit.tasks.generate import per_kind_counts

    train = families_in("train")
    counts = per_kind_counts(train, 10)
    by_kind: dict[str, int] = {}
    for fam in train:
        by_kind[fam.kind.value] = by_kind.get(fam.kind.value, 0) + counts[fam.name]
    assert by_kind == {"edit": 10, "recover": 10, "create": 10}
    assert max(counts.values()) - min(counts[f.name] for f in train if f.kind == train[0].kind) <= 10
    manifest = generate_tasks(train, tmp_path / "s", n=counts, seed=1, check=False)
    assert len(manifest["tasks"]) == 30 and {f: m["count"] for f, m in manifest["families"].items()} == {
        f: c for f, c in counts.items() if c
    }


def test_same_seed_same_bytes_other_seed_other_tasks(tmp_path: Path) -> None:
    fams = [get_family("fix_off_by_one"), get_family("js_edit")]
    generate_tasks(fams, tmp_path / "a", n=3, seed=2, check=False)
    generate_tasks(fams, tmp_path / "b", n=3, seed=2, check=False)
    generate_tasks(fams, tmp_path / "c", n=3, seed=3, check=False)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert {t.prompt for t in load_suite(tmp_path / "a")} != {t.prompt for t in load_suite(tmp_path / "c")}


def test_cli_lists_and_generates(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["tasks", "list"])
    assert res.exit_code == 0
    lines = res.output.splitlines()
    assert [line.split("\t")[0] for line in lines] == [f.name for f in families_in()]
    res = runner.invoke(
        app, ["tasks", "generate", "--all", "--split", "heldout", "--n", "2", "--out", str(tmp_path / "held")]
    )
    assert res.exit_code == 0, res.output
    manifest = orjson.loads((tmp_path / "held" / "tasks.json").read_bytes())
    assert {r["split"] for r in manifest["tasks"]} == {"heldout"} and len(manifest["tasks"]) == 2 * len(
        families_in("heldout")
    )
    assert "from held-out families" in res.output
    again = runner.invoke(app, ["tasks", "generate", "js_edit", "--n", "1", "--out", str(tmp_path / "held")])
    assert again.exit_code != 0 and isinstance(again.exception, UserError) and "not empty" in str(again.exception)
    with pytest.raises(UserError, match="unknown task family"):
        get_family("no_such_family")


def test_demo_generates_training_and_held_out_suites(tmp_path: Path) -> None:
    from harnessfit.demo.pipeline import DemoPlan, _tasks

    plan = DemoPlan(out=tmp_path, traces=None).resolved()
    facts = _tasks(plan, tmp_path)
    assert facts["generated"] and facts["train_tasks"] == len(families_in("train"))
    assert {s for _, s in suite_families(plan.train_suite).values()} == {"train"}
    assert {s for _, s in suite_families(plan.heldout_suite).values()} == {"heldout"}
    given = DemoPlan(out=tmp_path, traces=None, train_suite=plan.train_suite).resolved()
    assert _tasks(given, tmp_path) == {"generated": False, "train_suite": str(plan.train_suite)}
    assert given.heldout_suite is None  # a named training suite: no held-out families are assumed


def _changed_lines(fam, n: int = 40, *, decoys: bool = False) -> set[str]:
    """The lines a family's golden plans write (edits' new text, written files), over ``n`` instances; with
    ``decoys``, its decoys' lines too (a second-try session shows the decoy, and its repair quotes it as old text)."""
    lines = set()
    for i in range(n):
        for step in fam.build(random.Random(f"leak-{i}")).reference:
            calls = [step.get("args") or {}] + ([step["decoy"]] if decoys and step.get("decoy") else [])
            texts = [
                t for args in calls for t in [e["newText"] for e in args.get("edits", [])] + [args.get("content", "")]
            ]
            for text in texts:
                stripped = (ln.strip() for ln in text.splitlines())
                lines |= {ln for ln in stripped if len(ln) >= 8 and not ln.startswith("def ")}
    return lines


def test_no_training_family_writes_a_held_out_answer() -> None:
    """A held-out family's answers (the lines its golden plans write) appear in no training family's golden plans or
    decoys: training on the answer would make the held-out figures measure recall, not generalisation."""
    held = set().union(*(_changed_lines(f) for f in families_in("heldout")))
    assert held  # the held-out plans do write lines
    for fam in families_in("train"):
        assert not (_changed_lines(fam, decoys=True) & held), fam.name
