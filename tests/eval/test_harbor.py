"""Harbor task folders as an eval suite (issue 16, item 4): the shipped task reads as Harbor's format, its oracle
scores 100 % through the real Pi, the untouched workspace fails, a planted reward is not believed, and tasks whose
environment needs a container are reported and never run."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.errors import UserError
from harnessfit.eval.episode import EpisodeFacts
from harnessfit.eval.harbor import load_harbor_suite, load_harbor_task, parse_reward
from harnessfit.eval.results import load_results
from harnessfit.eval.run import run_eval
from harnessfit.eval.sandbox import sandbox_status


@pytest.fixture(scope="module")
def harbor_suite(repo_root) -> Path:
    return repo_root / "examples" / "tasks" / "harbor"


def _needs_bwrap():
    if sandbox_status() != "bwrap":
        pytest.skip(f"bubblewrap cannot run here: {sandbox_status()}")


def _facts(task) -> EpisodeFacts:
    return EpisodeFacts(task_id=task.id, seed=0, sandbox="bwrap", max_turns=1, events_file="e", stderr_file="s")


def _episode_dirs(tmp_path: Path, task) -> tuple[Path, Path]:
    ep = tmp_path / "ep"
    ws = ep / "workspace"
    ws.mkdir(parents=True)
    task.seed_workspace(ws)
    return ep, ws


def test_shipped_task_reads_as_a_harbor_task(harbor_suite):
    (task,) = load_harbor_suite(harbor_suite)
    assert task.id == "word-frequency" and task.environment_issue is None
    assert task.image == "python:3-slim"  # the Dockerfile's FROM: what the host stands in for
    assert task.workdir == "/app"
    assert task.copies == [("wordfreq.py", "/app/wordfreq.py"), ("sample.txt", "/app/sample.txt")]
    assert task.prompt.startswith("The script `/app/wordfreq.py`")
    assert task.limits.max_seconds == 300.0 and task.config.verifier.timeout_sec == 60.0
    assert (task.solution_dir / "solve.sh").is_file()


def test_untouched_workspace_fails_the_verifier(harbor_suite, tmp_path):
    _needs_bwrap()
    (task,) = load_harbor_suite(harbor_suite)
    ep, ws = _episode_dirs(tmp_path, task)
    facts = _facts(task)
    task.verify(ws, ep, facts)
    assert facts.reward == 0.0 and facts.checker_exit_code == 1
    assert facts.expected_change is False  # nothing changed since the seed
    assert "FAIL /app/sample.txt" in facts.checker_output
    assert facts.sandbox_policy["checker"]["network"].startswith("none")


def test_a_planted_reward_is_not_believed(harbor_suite, tmp_path):
    """The verifier's log folder is emptied before test.sh runs, and only a regular reward file is read: a reward
    left there (by an agent that could reach it, or a symlink to a file saying 1) never counts."""
    _needs_bwrap()
    task_dir = tmp_path / "suite" / "quiet-verifier"
    shutil.copytree(harbor_suite / "word-frequency", task_dir)
    # a verifier that writes a reward only on success, so a planted reward would be the only one
    (task_dir / "tests" / "test.sh").write_text(
        "#!/bin/bash\npython3 -I /tests/test_wordfreq.py && echo 1 > /logs/verifier/reward.txt\n"
    )
    task = load_harbor_task(task_dir)
    ep, ws = _episode_dirs(tmp_path, task)
    (ep / "verifier").mkdir()
    (ep / "verifier" / "reward.txt").write_text("1\n")
    (ws / "reward.txt").write_text("1\n")
    facts = _facts(task)
    task.verify(ws, ep, facts)
    assert facts.reward is None and facts.checker_exit_code == 1
    assert "wrote no reward" in facts.checker_output
    link_dir = tmp_path / "links"
    link_dir.mkdir()
    (tmp_path / "one.txt").write_text("1\n")
    (link_dir / "reward.txt").symlink_to(tmp_path / "one.txt")
    assert parse_reward(link_dir)[0] is None


def _container_suite(root: Path, harbor_suite: Path) -> Path:
    suite = root / "containers"
    cases = {
        "image": ('[environment]\ndocker_image = "ghcr.io/example/app:1"\n', None),
        "run-step": ("", "FROM python:3-slim\nWORKDIR /app\nRUN curl -fsSL https://example.com/i.sh | sh\n"),
        "other-base": ("", "FROM ubuntu:24.04\nWORKDIR /app\n"),
        "copy-outside": ("", "FROM python:3-slim\nWORKDIR /app\nCOPY wordfreq.py /usr/local/bin/\n"),
        "gpu": ("[environment]\ngpus = 1\n", None),
    }
    for name, (toml_extra, dockerfile) in cases.items():
        shutil.copytree(harbor_suite / "word-frequency", suite / name)
        spec = suite / name / "task.toml"
        text = spec.read_text().split("[environment]")[0]
        spec.write_text(text + (toml_extra or "[environment]\ncpus = 1\n"))
        if dockerfile is not None:
            (suite / name / "environment" / "Dockerfile").write_text(dockerfile)
    return suite


def test_tasks_needing_a_container_are_reported_and_not_run(pi_installed, harbor_suite, tmp_path):
    suite = _container_suite(tmp_path, harbor_suite)
    issues = {t.id: t.environment_issue for t in load_harbor_suite(suite)}
    assert issues == {
        "copy-outside": "needs a container build (COPY to /usr/local/bin, outside /app)",
        "gpu": "needs 1 GPU(s) in its container",
        "image": "needs the container image ghcr.io/example/app:1",
        "other-base": "needs the container image ubuntu:24.04",
        "run-step": (
            "needs a container build (RUN curl -fsSL https://example.com/i.sh | sh: a pipe, redirection or "
            "substitution cannot be done on the host)"
        ),
    }
    out = tmp_path / "out"
    results = run_eval("scripted:oracle", f"harbor:{suite}", out, progress=False)
    assert {e.facts.status for e in results.episodes} == {"needs_container"}
    # each names the image it needs and no backend (nothing ran it); results.json keeps both
    images = {e.facts.task_id: (e.facts.image, e.facts.backend) for e in load_results(out).episodes}
    assert images == {
        "copy-outside": ("python:3-slim", None),
        "gpu": ("python:3-slim", None),
        "image": ("ghcr.io/example/app:1", None),
        "other-base": ("ubuntu:24.04", None),
        "run-step": ("python:3-slim", None),
    }
    agg = results.aggregates
    assert agg["scored"] == 0 and agg["unscored_by_status"] == {"needs_container": 5}
    assert agg["rates"]["complete_loop"]["n"] == 0  # never passed, never failed: out of the rates
    assert not (out / "episodes").exists()  # nothing ran
    assert "unscored (needs_container)" in (out / "results.md").read_text()


def test_harbor_suite_errors_are_one_line(tmp_path):
    with pytest.raises(UserError, match="not found"):
        load_harbor_suite(tmp_path / "nope")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "task.toml").write_text("[verifier]\ntimeout_sec = 1\n")
    with pytest.raises(UserError, match=r"instruction\.md missing"):
        load_harbor_suite(tmp_path)
    (tmp_path / "t" / "instruction.md").write_text("do it")
    (tmp_path / "t" / "tests").mkdir()
    (tmp_path / "t" / "tests" / "test.sh").write_text("exit 0")
    (tmp_path / "t" / "task.toml").write_text("[verifier\n")
    with pytest.raises(UserError, match="not valid TOML"):
        load_harbor_suite(tmp_path)


@pytest.mark.pi
@pytest.mark.slow
def test_oracle_scores_full_marks_through_pi(pi_installed, harbor_suite, tmp_path):
    """``eval agent --suite harbor:DIR --model scripted:oracle``: Pi runs solution/solve.sh in the sandbox, the
    verifier (copied in afterwards) awards 1.0, and the loop completes."""
    _needs_bwrap()
    out = tmp_path / "oracle"
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "agent",
            "--model",
            "scripted:oracle",
            "--suite",
            f"harbor:{harbor_suite}",
            "--out",
            str(out),
            "--env",
            "host",
        ],
    )  # auto would pick podman where it works
    assert res.exit_code == 0, res.output
    results = load_results(out)
    assert results.suite["format"] == "harbor"
    (ep,) = results.episodes
    assert ep.facts.status == "success", ep.facts.error
    assert ep.facts.reward == 1.0 and ep.metrics.checker_passed and ep.metrics.complete_loop
    assert (ep.facts.backend, ep.facts.image) == ("host", "python:3-slim")  # bubblewrap stood in for the image
    assert ep.facts.verifier.reward_files == {"reward.txt": "1\n"} and ep.facts.verifier.exit_code == 0
    assert "ok /app/sample.txt" in ep.facts.verifier.stdout
    assert ep.facts.expected_change and ep.metrics.integrity_flag is None
    assert results.aggregates["rates"]["complete_loop"]["rate"] == 1.0
    assert "/solution" in ep.facts.sandbox_policy["agent"]["read_only"]
    assert "/tests" not in str(ep.facts.sandbox_policy["agent"])  # the agent never saw the tests
    session = orjson.loads((out / ep.facts.session_file).read_bytes().splitlines()[0])
    assert session["cwd"] == "/app"


def test_dockerfile_layout_is_followed(harbor_suite, tmp_path):
    """The first WORKDIR is the mounted workspace, later WORKDIRs the agent's folder inside it, COPY fills it."""
    task_dir = tmp_path / "nested"
    shutil.copytree(harbor_suite / "word-frequency", task_dir)
    (task_dir / "environment" / "Dockerfile").write_text(
        '# a comment\nFROM python:3-slim\nWORKDIR /srv\nENV MODE=fast\nCOPY ["sample.txt", "data/in.txt"]\n'
        'COPY . .\nWORKDIR pkg\nCMD ["python3"]\n'
    )
    task = load_harbor_task(task_dir)
    assert task.environment_issue is None
    assert (task.mount, task.workdir, task.env) == ("/srv", "/srv/pkg", {"MODE": "fast"})
    ws = tmp_path / "ws"
    ws.mkdir()
    task.seed_workspace(ws)
    assert (ws / "data" / "in.txt").read_text() == (task_dir / "environment" / "sample.txt").read_text()
    assert (ws / "wordfreq.py").is_file() and (ws / "pkg").is_dir()
