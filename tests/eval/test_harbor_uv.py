"""uv for Harbor verifiers, offline (issue 29, item 3): astral's installer line stood in for by the pinned uv of the
wheel cache, other downloads and foreign Pythons named before the verifier runs, and Harbor's template task
(installer + ``uvx pytest``) scored on the host backend and, where podman works, in its container."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harnessfit.errors import UserError
from harnessfit.eval.episode import EpisodeFacts
from harnessfit.eval.harbor import load_harbor_task
from harnessfit.eval.images import detect_engine
from harnessfit.eval.run import run_eval
from harnessfit.eval.sandbox import sandbox_status
from harnessfit.eval.verifier_tools import read_test_sh, uv_bin
from harnessfit.eval.wheels import UV_DEFAULT

DATA = Path(__file__).parent / "data" / "harbor"
PY = (3, 11)
TEMPLATE = (DATA / "uv-pytest" / "tests" / "test.sh").read_text()


def test_the_astral_installer_is_stood_in_for_by_the_uv_it_names():
    plan = read_test_sh(TEMPLATE, PY)
    assert (plan.version, plan.installer, plan.problem) == ("0.9.5", "https://astral.sh/uv/0.9.5/install.sh", None)
    assert read_test_sh("curl -LsSf https://astral.sh/uv/install.sh | sh\nuv run pytest\n", PY).version == UV_DEFAULT
    plan = read_test_sh("wget -qO- https://github.com/astral-sh/uv/releases/download/0.8.13/uv-installer.sh | bash", PY)
    assert plan.version == "0.8.13" and plan.problem is None
    assert read_test_sh("uvx pytest==8.4.1 /tests\n", PY).version == UV_DEFAULT  # uv without its installer
    assert read_test_sh("python3 -m pytest /tests  # no uv (uv.lock is a file)\n", PY).version is None
    assert read_test_sh("# curl https://example.com/x | sh\ncurl -s http://localhost:8000/health\n", PY).problem is None


@pytest.mark.parametrize(
    "script",
    [
        "curl -fsSL https://example.com/install.sh | sh",
        "wget -qO- https://example.com/install.sh | bash -s -- --yes",
        'sh -c "$(curl -fsSL https://example.com/install.sh)"',
        "curl -o /tmp/data.json https://example.com/install.sh && python3 /tests/check.py",
    ],
)
def test_any_other_download_is_named_and_not_run(script):
    assert read_test_sh(script, PY).problem == (
        "test.sh fetches https://example.com/install.sh at verify time; harnessfit verifies offline"
    )


def test_a_python_uv_cannot_have_offline_is_named():
    plan = read_test_sh(TEMPLATE.replace("-p 3.11", "-p 3.13"), PY)
    assert plan.problem == (
        "test.sh asks uv for Python 3.13; the verifier's environment has Python 3.11 and uv downloads no Python offline"
    )
    assert read_test_sh("uv run --python=3.12 pytest", PY).problem.startswith("test.sh asks uv for Python 3.12")
    assert read_test_sh(TEMPLATE.replace("-p 3.11", "-p 3.13"), None).problem is None  # an image's Python unknown


@pytest.mark.slow
def test_uv_is_unpacked_as_the_installer_leaves_it():
    folder = uv_bin(UV_DEFAULT)  # from the wheel cache `make setup` fills
    assert sorted(p.name for p in folder.iterdir()) == ["env", "uv", "uvx"]
    out = subprocess.run([str(folder / "uv"), "--version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith(f"uv {UV_DEFAULT} ")
    env = {"HOME": "/nonexistent-home", "PATH": "/usr/bin:/bin"}
    path = subprocess.run(
        ["sh", "-c", f". {folder}/env; . {folder}/env; echo $PATH"], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert path == "/nonexistent-home/.local/bin:/usr/bin:/bin"  # put first, once


def _verify(task, tmp_path: Path, name: str, solved: bool) -> EpisodeFacts:
    ep_dir = tmp_path / name
    workspace = ep_dir / "workspace"
    workspace.mkdir(parents=True)
    task.seed_workspace(workspace)
    if solved:
        (workspace / "sorted.txt").write_text("apple\nfig\npear\n")
    facts = EpisodeFacts(task_id=task.id, seed=0, sandbox="bwrap", max_turns=1, events_file="e", stderr_file="s")
    task.verify(workspace, ep_dir, facts)
    return facts


@pytest.mark.slow
def test_the_host_verifier_runs_uvx_pytest_offline(tmp_path):
    """The verifier alone (no agent): the installer line fails offline and changes nothing, uvx installs pytest
    and its ctrf plugin from the wheel cache, the reward follows the workspace."""
    if sandbox_status() != "bwrap":
        pytest.skip(f"bubblewrap cannot run here: {sandbox_status()}")
    task = load_harbor_task(DATA / "uv-pytest")
    solved, untouched = _verify(task, tmp_path, "solved", True), _verify(task, tmp_path, "untouched", False)
    assert (solved.reward, untouched.reward) == (1.0, 0.0), solved.checker_output
    assert "Could not resolve host: astral.sh" in solved.verifier.stderr  # the installer really ran, offline
    assert "plugins: json-ctrf-0.3.5" in solved.verifier.stdout and "pytest-8.4.1" in solved.verifier.stdout
    assert (tmp_path / "solved" / "verifier" / "ctrf.json").is_file()
    assert solved.sandbox_policy["checker"]["uv"].startswith("uv 0.9.5 from the pinned wheel cache")
    task_dir = tmp_path / "task-fetches"
    shutil.copytree(DATA / "uv-pytest", task_dir)
    (task_dir / "tests" / "test.sh").write_text(
        TEMPLATE.replace("https://astral.sh/uv/0.9.5/install.sh", "https://example.com/tool.sh")
    )
    fetches = _verify(load_harbor_task(task_dir), tmp_path, "fetches", True)
    assert fetches.reward is None and fetches.checker_exit_code == 1
    assert (
        fetches.verifier.problem
        == "test.sh fetches https://example.com/tool.sh at verify time; harnessfit verifies offline"
    )
    assert not (tmp_path / "fetches" / "checker.txt").exists()  # never run


@pytest.mark.pi
@pytest.mark.slow
def test_oracle_and_nop_with_uvx_pytest_on_the_host(pi_installed, tmp_path):
    if sandbox_status() != "bwrap":
        pytest.skip(f"bubblewrap cannot run here: {sandbox_status()}")
    rewards = {}
    for model in ("scripted:oracle", "scripted:nop"):
        results = run_eval(model, f"harbor:{DATA / 'uv-pytest'}", tmp_path / model[9:], env="host", progress=False)
        (ep,) = results.episodes
        assert ep.facts.status == "success", ep.facts.error
        assert ep.facts.backend == "host"
        rewards[model[9:]] = ep.facts.reward
    assert rewards == {"oracle": 1.0, "nop": 0.0}


@pytest.mark.pi
@pytest.mark.slow
def test_oracle_and_nop_with_uvx_pytest_in_podman(pi_installed, tmp_path):
    try:
        detect_engine("podman")
    except UserError as exc:
        pytest.skip(f"no working podman here: {exc}")
    rewards = {}
    for model in ("scripted:oracle", "scripted:nop"):
        results = run_eval(model, f"harbor:{DATA / 'uv-pytest'}", tmp_path / model[9:], env="podman", progress=False)
        (ep,) = results.episodes
        assert ep.facts.status == "success", ep.facts.error
        assert ep.facts.backend == "podman"
        assert ep.facts.sandbox_policy["checker"]["uv"].startswith("uv 0.9.5")
        rewards[model[9:]] = ep.facts.reward
    assert rewards == {"oracle": 1.0, "nop": 0.0}
