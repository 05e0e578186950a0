"""Shared test fixtures. Real traces are read from ../shared/traces (beside the clone), never copied here."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"
TRACES_DIR = SHARED_DIR / "traces"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def traces_dir() -> Path:
    if not TRACES_DIR.is_dir():
        pytest.fail(f"real traces not found at {TRACES_DIR}: shared/ must sit beside the clone")
    return TRACES_DIR


pytest_plugins = ["tests._helpers.pi_fixtures"]  # pi_installed, default_suite, small_suite: eval and synth tests
