"""Fixtures for the harness tests: the real Pi CLI, installed once per session (idempotent, lock-safe)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.harness.pi import DEFAULT_PI_VERSION, install_pi


@pytest.fixture(scope="session")
def pi_bin() -> Path:
    return install_pi(DEFAULT_PI_VERSION)
