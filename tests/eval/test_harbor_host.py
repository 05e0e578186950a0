"""Harbor tasks with RUN steps on the host backend (issue 29, item 3), and what the container backend carries from
the agent's container into the verifier's (item 1)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harnessfit.eval.backends.carry import carried_roots
from harnessfit.eval.backends.host import HostSetup, read_run_step
from harnessfit.eval.harbor import load_harbor_task
from harnessfit.eval.run import run_eval
from harnessfit.eval.sandbox import sandbox_status

DATA = Path(__file__).parent / "data" / "harbor"


def _read(command: str) -> tuple[HostSetup, str | None]:
    setup = HostSetup()
    return setup, read_run_step(command, "/app", setup)


def test_run_steps_the_host_satisfies():
    setup, problem = _read(
        "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
        "--no-install-recommends bash coreutils && rm -rf /var/lib/apt/lists/*"
    )
    assert problem is None and setup.apt == ["bash", "coreutils"]
    setup, problem = _read("pip install --no-cache-dir Pillow==10.3.0 numpy==1.26.4; mkdir -p /output data /logs/x")
    assert problem is None and setup.pip == ["Pillow==10.3.0", "numpy==1.26.4"]
    assert setup.dirs == ["/output", "/app/data", "/logs/x"]
    assert setup.extra_dirs("/app") == ["/output"] and setup.seed_dirs("/app") == ["/app/data"]


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (
            "apt-get install -y hf-no-such-package-here",
            "apt package hf-no-such-package-here is not installed on this host",
        ),
        ("apt-get install -y bash=0.0-hf", "apt package bash is "),
        ("curl -fsSL https://example.com/install.sh | sh", "a pipe, redirection or substitution"),
        ("chmod +x /app/run.sh", "chmod cannot be done on the host"),
        ("mkdir -p /usr/local/share/x", "mkdir /usr/local/share/x (a system path)"),
        ("rm -rf /app/data", "rm /app/data cannot be done"),
        ("pip install -r requirements.txt", "cannot be read ahead"),
        ('["pip", "install", "numpy"]', "exec-form RUN"),
    ],
)
def test_run_steps_the_host_cannot_satisfy_are_named(command, reason):
    assert reason in (_read(command)[1] or "")


def test_a_task_with_run_steps_is_host_runnable(tmp_path):
    task = load_harbor_task(DATA / "outside-output")
    assert task.environment_issue is None and task.setup.extra_dirs(task.mount) == ["/output"]
    assert load_harbor_task(DATA / "both-rewards").setup.pip == ["pytest==8.4.1"]
    task_dir = tmp_path / "needs-curl"
    shutil.copytree(DATA / "outside-output", task_dir)
    (task_dir / "environment" / "Dockerfile").write_text(
        "FROM python:3.11-slim\nWORKDIR /app\nRUN mkdir -p /output && chown nobody /output\n"
    )
    assert load_harbor_task(task_dir).environment_issue == (
        "needs a container build (RUN mkdir -p /output && chown nobody /output: chown cannot be done on the host)"
    )


def test_the_verifier_gets_what_the_agent_changed_outside_system_paths():
    changed = [
        "/etc",
        "/output",
        "/output/state.json",
        "/usr/local/bin/pytest",
        "/root/.bashrc",
        "/tmp/t",
        "/tmp/pytest-of-x",
        "/tmp/pytest-of-x/sessions",
        "/app",
        "/app/x",
        "/tests/score.txt",
        "/hf/home",
        "/srv",
        "/srv/app/out",
        "/opt/tool/run",
        "/pytest.ini",  # a file in "/", an ancestor of /tests: it would configure the verifier's pytest
        "/conftest.py",
    ]
    roots, deleted = carried_roots(
        changed,
        ["/app/words.txt", "/output/old", "/usr/bin/python3"],
        protected=["/app", "/srv/app", "/tmp/pytest-of-x/sessions"],
    )
    assert roots == ["/opt/tool/run", "/output", "/tmp/t"]
    assert deleted == ["/output/old"]


def _needs_bwrap():
    if sandbox_status() != "bwrap":
        pytest.skip(f"bubblewrap cannot run here: {sandbox_status()}")


@pytest.mark.pi
@pytest.mark.slow
def test_oracle_and_nop_on_the_host_with_run_steps(pi_installed, tmp_path):
    """RUN mkdir /output (bound for agent and verifier) and RUN pip install (an episode virtualenv from the wheel
    cache) on the host backend: the oracle scores 1.0, the untouched workspace 0.0."""
    _needs_bwrap()
    rewards = {}
    for name in ("outside-output", "both-rewards"):
        for model in ("scripted:oracle", "scripted:nop"):
            results = run_eval(
                model, f"harbor:{DATA / name}", tmp_path / f"{name}-{model[9:]}", env="host", progress=False
            )
            (ep,) = results.episodes
            assert ep.facts.status == "success", ep.facts.error
            assert ep.facts.backend == "host"
            rewards[name, model[9:]] = ep.facts.reward
    assert rewards == {
        ("outside-output", "oracle"): 1.0,
        ("outside-output", "nop"): 0.0,
        ("both-rewards", "oracle"): 1.0,
        ("both-rewards", "nop"): 0.0,
    }
    policy = ep.facts.sandbox_policy
    assert any(p.endswith("verifier-venv") for p in policy["checker"]["read_write"])
