"""The RL section of the HTML report from a hand-made ``train rl`` run folder in the shapes the run writes
(``metrics.jsonl``, ``episodes.jsonl`` with the eval's facts and metrics, ``run.json``, ``recipe.json``, the episodes'
files under ``rollouts/step-NNNN/``, ``eval_before`` / ``eval_after``): the numbers per step with the Wilson interval,
a page per episode linked from its step, the held-out table, escaping, and ``harnessfit report`` finding the run."""

from __future__ import annotations

import html
import posixpath
import re
import shutil
from pathlib import Path

import orjson
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.eval.episode import EpisodeFacts
from harnessfit.eval.scorers import score_episode
from harnessfit.eval.task import load_task
from harnessfit.report.build import build_report, report_folders
from harnessfit.report.sections import SECTIONS
from harnessfit.report.sections.rl import episode_page_path, section

MARKUP = "<script>window.__pwned=1</script>"
DATA = Path(__file__).resolve().parents[1] / "eval" / "data" / "results_before"


def _episode(step_dir: Path, task, g: int, *, passed: bool) -> dict:
    """One episode's files as the runner leaves them, and its row as ``train rl`` logs it."""
    rel = f"episodes/{task.id}/seed-{g}"
    answer = f"Done {MARKUP}" if passed else None
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": task.prompt}]},
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}],
            "stopReason": "toolUse",
            "usage": {"input": 10, "output": 5, "totalTokens": 15},
        },
        {"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "content": [{"type": "text", "text": "a"}]},
    ]
    if answer:
        content = [{"type": "text", "text": answer}]
        msgs.append({"role": "assistant", "content": content, "stopReason": "stop", "usage": {}})
    rows = [{"type": "session", "version": 3, "id": "x", "cwd": "/w"}]
    rows += [{"type": "message", "id": f"{i:08x}", "parentId": None, "message": m} for i, m in enumerate(msgs)]
    (step_dir / rel).mkdir(parents=True)
    (step_dir / rel / "session.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    (step_dir / rel / "stderr.txt").write_text("")  # no event stream: the session file is read (as in test_scorers)
    facts = EpisodeFacts(
        task_id=task.id,
        seed=g,
        sandbox="bwrap",
        max_turns=4,
        events_file=f"{rel}/events.jsonl",
        stderr_file=f"{rel}/stderr.txt",
        session_file=f"{rel}/session.jsonl",
        pi_exit_code=0,
        expected_change=passed,
        checker_exit_code=0 if passed else 1,
    )
    metrics = score_episode(facts, task, step_dir)
    assert metrics.complete_loop is passed
    step = int(step_dir.name.removeprefix("step-"))
    return {
        "step": step,
        "task_id": task.id,
        "group_index": g,
        "episode_dir": f"rollouts/{step_dir.name}/{rel}",
        "reward": 1.0 if passed else 0.0,
        "components": {"checker_passed": float(passed)},
        "complete_loop": passed,
        "facts": facts.model_dump(mode="json"),
        "metrics": metrics.model_dump(mode="json"),
    }


def _run(root: Path, default_suite: Path) -> Path:
    """A finished two-step run: step 1 one loop of two, step 2 two of three scored (one unscored)."""
    d = root / "rl-out"
    task = load_task(default_suite / "edit_greeting")
    episodes = [
        _episode(d / "rollouts" / "step-0001", task, 0, passed=True),
        _episode(d / "rollouts" / "step-0001", task, 1, passed=False),
        _episode(d / "rollouts" / "step-0002", task, 0, passed=True),
        _episode(d / "rollouts" / "step-0002", task, 1, passed=True),
        {  # an episode the environment could not score, written before the facts were logged
            "step": 2,
            "task_id": f"t{MARKUP}",
            "group_index": 2,
            "episode_dir": "rollouts/step-0002/episodes/x/seed-2",
            "reward": None,
            "unscored": f"episode error: {MARKUP}",
            "complete_loop": None,
        },
    ]
    (d / "rollouts/step-0002/episodes/x/seed-2").mkdir(parents=True)
    (d / "rollouts/step-0002/episodes/x/seed-2/events.jsonl").write_text("{}\n")
    steps = [
        {"step": 1, "episodes": 2, "scored": 2, "reward_mean": 0.5, "complete_loop_rate": 0.5, "groups": 1},
        {"step": 2, "episodes": 3, "scored": 2, "reward_mean": 1.0, "complete_loop_rate": 1.0, "groups": 1},
    ]
    for s in steps:
        s.update(zero_variance_groups=0, loss=0.25, tasks=[task.id])
    (d / "metrics.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in steps))
    (d / "episodes.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in episodes))
    run = {"status": "completed", "steps": 2, "ended": "max_steps 2 reached", "missing_evals": {}}
    (d / "run.json").write_bytes(orjson.dumps(run))
    recipe = {"config_class": "HarnessfitRLConfig", "resolved": {"suite": str(default_suite)}, "harness": None}
    (d / "recipe.json").write_bytes(orjson.dumps(recipe))
    shutil.copytree(DATA / "eval-never-stop", d / "eval_before")
    shutil.copytree(DATA / "eval-golden", d / "eval_after")
    return d


def _text(markup: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def test_rl_section_numbers_links_and_escaping(tmp_path: Path, default_suite: Path) -> None:
    d = _run(tmp_path, default_suite)
    view = tmp_path / "view"
    view.mkdir()
    (view / "rl").symlink_to(d)
    sec = section(view)
    assert sec is not None and sec.key == "rl"
    body = str(sec.body)
    rows = {m.group(1): m.group(0) for m in re.finditer(r'<tr id="rl-step-(\d+)">.*?</tr>', body, re.DOTALL)}
    assert set(rows) == {"1", "2"}
    # step 1: 1 loop of 2 scored, Wilson [9–91]; step 2: 2 of 2 scored (the unscored one left out), [34–100]
    assert "50% [9–91] (1/2)" in _text(rows["1"]) and "100% [34–100] (2/2)" in _text(rows["2"])
    assert "2 / 2" in _text(rows["1"]) and "2 / 3" in _text(rows["2"])
    assert "unscored" in _text(rows["2"]) and "1 ✓" in _text(rows["2"])
    # each step links to the pages of exactly its own episodes, and each page exists
    pages = {p.path: p for p in sec.pages}
    links1 = re.findall(r'href="([^"]+\.html)"', rows["1"])
    assert links1 == ["rl/episodes/step-0001/edit_greeting/g0.html", "rl/episodes/step-0001/edit_greeting/g1.html"]
    assert set(links1) <= set(pages) and len(pages) == 4
    assert episode_page_path({"step": 2, "task_id": "a/b", "group_index": 1}) == "rl/episodes/step-0002/a-b/g1.html"
    page = str(pages["rl/episodes/step-0001/edit_greeting/g0.html"].body)
    assert "window.__pwned" in page and MARKUP not in page  # the model's answer shown as text
    assert "train rl step 1" in page and "#rl" in page
    # the unscored episode without facts links its event stream; its id and reason are escaped
    assert MARKUP not in body and html.escape(MARKUP) in body
    assert "files/rl/rollouts/step-0002/episodes/x/seed-2/events.jsonl" in sec.files
    # the held-out before/after table with intervals
    held = _text(body.split("Held-out suite")[1])
    assert "0% [0–66] (0/2)" in held and "100% [51–100] (4/4)" in held
    assert "Run completed: max_steps 2 reached" in _text(body)
    assert "0.5 → 1" in sec.summary and "(1/2)" in sec.summary and "(2/2)" in sec.summary


def test_report_finds_an_rl_run_and_its_held_out_evals(tmp_path: Path, default_suite: Path) -> None:
    d = _run(tmp_path, default_suite)
    assert "rl" in SECTIONS
    res = report_folders([d], tmp_path / "report")
    assert "rl" in res.sections and "eval" in res.sections  # the held-out evals get the eval section's pages
    index = (tmp_path / "report" / "index.html").read_text()
    assert 'id="rl"' in index and MARKUP not in index
    for link in re.findall(r'href="(rl/episodes/[^"]+)"', index):
        assert (tmp_path / "report" / link).is_file()
    page = (tmp_path / "report" / "rl/episodes/step-0002/edit_greeting/g1.html").read_text()
    back = re.search(r'href="([^"]*index\.html#rl-step-2)"', page)
    assert back is not None
    assert posixpath.normpath(posixpath.join("rl/episodes/step-0002/edit_greeting", back.group(1))).startswith("index")
    out = CliRunner().invoke(app, ["report", str(d), "--out", str(tmp_path / "r2")])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "r2" / "rl/episodes/step-0001/edit_greeting/g0.html").is_file()
    # a run laid out as the demo lays out stages (RUN/rl) is read as it is
    run = tmp_path / "run"
    run.mkdir()
    shutil.move(str(d), run / "rl")
    assert "rl" in build_report(run).sections
