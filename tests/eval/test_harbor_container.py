"""The container backend for Harbor tasks (issue 29): engine choice, the offline image stand-in, the pinned wheel
cache, and — where podman works — the oracle and the untouched workspace through Pi inside the container, scored
from reward.json before reward.txt as Harbor does."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.errors import UserError
from harnessfit.eval.backends.container_image import _rewrite
from harnessfit.eval.harbor import load_harbor_task
from harnessfit.eval.images import PYTHON_IMAGE, detect_engine, stand_in
from harnessfit.eval.run import _container_engine, run_eval
from harnessfit.eval.wheels import pip_requirements

DATA = Path(__file__).parent / "data" / "harbor"


def test_stand_in_only_for_debian_bookworm_python_311():
    assert stand_in("python:3.11-slim") is None
    assert stand_in("docker.io/library/python:3.11.9-slim-bookworm") is None
    assert stand_in("debian:bookworm-slim") is None
    assert "no offline stand-in for python:3.12-slim" in stand_in("python:3.12-slim")
    assert "no offline stand-in for ubuntu:24.04" in stand_in("ubuntu:24.04")


def test_pip_requirements_are_read_from_run_steps():
    assert pip_requirements("pip install --no-cache-dir Pillow==10.3.0 numpy==1.26.4 && rm -rf /x") == (
        ["Pillow==10.3.0", "numpy==1.26.4"],
        None,
    )
    assert pip_requirements("python3 -m pip install -q pytest==8.2.2 || true")[0] == ["pytest==8.2.2"]
    assert pip_requirements("apt-get update && apt-get install -y curl") == ([], None)
    reqs, problem = pip_requirements("pip install -r requirements.txt")
    assert reqs == [] and "cannot be read ahead" in problem
    # a test.sh's continuation lines and redirections (sokoban-from-image's verifier) are shell, not requirements
    script = "pip install --quiet \\\n    pytest==8.2.2 Pillow==10.3.0 2>/dev/null || \\\npip install -q pytest==8.2.2 > log\n"
    assert pip_requirements(script) == (["pytest==8.2.2", "Pillow==10.3.0", "pytest==8.2.2"], None)


def test_dockerfile_rewrite_answers_from_with_the_offline_image():
    text, base, reqs = _rewrite((DATA / "both-rewards" / "environment" / "Dockerfile").read_text())
    assert base == "python:3.11-slim" and reqs == ["pytest==8.4.1"]
    assert text.splitlines()[0] == f"FROM {PYTHON_IMAGE}"
    assert "ARG PIP_NO_INDEX=1" in text and "COPY numbers.txt /app/numbers.txt" in text
    assert _rewrite("FROM ubuntu:24.04\nRUN true\n").startswith("no offline stand-in for ubuntu:24.04")
    assert "multi-stage" in _rewrite("FROM python:3.11 AS build\nFROM python:3.11\n")
    assert "cannot be read ahead" in _rewrite("FROM python:3.11\nRUN pip install -r r.txt\n")


def test_env_choice_errors_are_one_line():
    with pytest.raises(UserError, match="--env must be host, podman, docker or auto"):
        _container_engine("kubernetes")
    assert _container_engine("host") is None
    with pytest.raises(UserError, match="unknown container engine"):
        detect_engine("lxc")


@pytest.mark.slow
def test_docker_without_a_daemon_is_not_an_engine():
    import shutil

    if shutil.which("docker") is None:
        pytest.skip("no docker client here")
    try:
        engine = detect_engine("docker")
    except UserError as exc:
        assert "docker" in str(exc)
    else:
        assert engine.name == "docker"  # a machine with a working daemon


@pytest.fixture(scope="module")
def podman():
    try:
        engine = detect_engine("podman")
    except UserError as exc:
        pytest.skip(f"no working podman here: {exc}")
    return engine


@pytest.mark.slow
@pytest.mark.pi
def test_oracle_and_nop_in_podman_scored_from_reward_json(pi_installed, podman, tmp_path):
    task = load_harbor_task(DATA / "both-rewards")
    assert task.environment_issue is None  # its RUN pip install: the host (an episode virtualenv) and the container
    rewards = {}
    for model in ("scripted:oracle", "scripted:nop"):
        results = run_eval(
            model, f"harbor:{DATA / 'both-rewards'}", tmp_path / model.split(":")[1], env="podman", progress=False
        )
        (ep,) = results.episodes
        f = ep.facts
        assert f.status == "success", f.error
        assert f.backend == "podman" and "stood in by" in f.image and "python:3.11-slim" in f.image
        assert f.verifier.reward_files["reward.txt"].strip() == "0"  # Harbor reads reward.json first
        assert f.rewards["style"] == 0.5
        # the task's memory and process caps, where the engine enforces them (results say which held)
        assert ("memory_bytes" in f.sandbox_policy["agent"]["caps"]) == podman.limits
        assert f.sandbox_policy["checker"]["caps"] == f.sandbox_policy["agent"]["caps"]
        rewards[model] = f.reward
    assert rewards == {"scripted:oracle": 1.0, "scripted:nop": 0.0}
    assert results.config["env"] == "podman"


@pytest.mark.slow
@pytest.mark.pi
def test_outputs_outside_the_working_folder_reach_the_verifier(pi_installed, podman, tmp_path):
    """The oracle writes /output/count.txt (outside /app): the verifier's fresh container gets it carried in."""
    rewards = {}
    for model in ("scripted:oracle", "scripted:nop"):
        results = run_eval(
            model, f"harbor:{DATA / 'outside-output'}", tmp_path / model.split(":")[1], env="podman", progress=False
        )
        (ep,) = results.episodes
        assert ep.facts.status == "success", ep.facts.error
        rewards[model] = ep.facts.reward
        carried = ep.facts.sandbox_policy["agent"]["to the verifier"]["carried"]
        assert ("/output" in carried) == (model == "scripted:oracle")  # the image's empty /output is no change
        assert ep.facts.sandbox_policy["checker"]["carried in"] == carried
    assert rewards == {"scripted:oracle": 1.0, "scripted:nop": 0.0}


@pytest.mark.slow
def test_memory_and_process_caps_hold_in_the_container(podman):
    """Where the engine enforces them, a container runs under the task's memory and process caps: the cgroup the
    container sees holds the memory cap, and a process past the cap cannot start."""
    import subprocess

    if not podman.limits:
        pytest.skip("this engine's cgroups refuse --memory/--pids-limit (the results record no caps)")
    from harnessfit.eval.images import BASE_IMAGE

    mem, procs = 96 << 20, 16
    script = (
        "import os, subprocess\n"
        "p = '/sys/fs/cgroup/memory/memory.limit_in_bytes'\n"
        "q = '/sys/fs/cgroup/memory.max'\n"
        "print(open(p if os.path.exists(p) else q).read().strip())\n"
        "kids = []\n"
        "try:\n"
        "    for _ in range(40):\n"
        "        kids.append(subprocess.Popen(['sleep', '5']))\n"
        "    print('started', len(kids))\n"
        "except OSError:\n"
        "    print('refused after', len(kids))\n"
    )
    flags = podman.cap_flags(mem, procs)
    out = subprocess.run(
        [
            podman.exe,
            "run",
            "--rm",
            "--network",
            "none",
            *podman.run_flags,
            *flags,
            BASE_IMAGE,
            "python3",
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    limit, started = out.stdout.split("\n")[:2]
    assert int(limit) == mem
    assert started.startswith("refused after") and int(started.split()[-1]) < procs
    assert podman.enforced_caps(mem, procs) == {"memory_bytes": mem, "processes": procs}
