"""Fixtures for tests that run Pi: the real Pi CLI (installed once per session) and the default task suite."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harnessfit.harness.pi import install_pi


@pytest.fixture(scope="session")
def pi_installed() -> Path:
    return install_pi()


@pytest.fixture(scope="session")
def default_suite(repo_root: Path) -> Path:
    return repo_root / "examples" / "tasks" / "default"


@pytest.fixture
def small_suite(tmp_path: Path, default_suite: Path) -> Path:
    """A two-task suite (one recover, one create) copied from the default suite."""
    suite = tmp_path / "suite"
    for name in ("create_hello_script", "recover_missing_config"):
        shutil.copytree(default_suite / name, suite / name)
    return suite
