"""Every command and subcommand says what it does (``--help`` exits 0 with a description), found by walking the
app's registered commands so new ones are covered; and ``harnessfit build CONFIG`` runs from a TOML and a YAML file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from harnessfit.cli import app


def _walk(cmd: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """(path, command) for the app and, recursively, every command of every group (typer vendors its own click,
    so groups are recognised by their ``commands`` mapping)."""
    out = [(path, cmd)]
    if isinstance(getattr(cmd, "commands", None), dict):
        for name in sorted(cmd.commands):
            out += _walk(cmd.commands[name], (*path, name))
    return out


COMMANDS = _walk(typer.main.get_command(app))


def test_the_walk_finds_the_stages() -> None:
    top = {p[0] for p, _ in COMMANDS if len(p) == 1}
    assert {"convert", "build", "verify", "harness"} <= top
    assert len(COMMANDS) > len(top) + 1  # subcommands of groups are walked too


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "harnessfit")
def test_help_exits_0_and_describes_the_command(path: tuple[str, ...]) -> None:
    cmd = dict(COMMANDS)[path]
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "usage" in result.output.lower()  # click says "Usage:", the train commands' TRL parser "usage:"
    description = (cmd.help or cmd.short_help or "").strip()
    assert description, f"`harnessfit {' '.join(path)}` has no description"
    first_words = " ".join(description.split()[:3])
    assert first_words in " ".join(result.output.split()), (first_words, result.output)


def _small_input(traces_dir: Path) -> str:
    return str(traces_dir / "pi" / "kvsankar__agent-history__session-01.jsonl")


@pytest.mark.parametrize("kind", ["toml", "yaml"])
def test_build_from_a_config_file(kind: str, tmp_path: Path, traces_dir: Path) -> None:
    src, out = _small_input(traces_dir), tmp_path / "ds"
    if kind == "toml":
        text = (
            f'inputs = [{{ path = {json.dumps(src)}, formats = ["pi"] }}]\nparquet = false\n'
            f'install_dir = "/opt/pi"\nout = {json.dumps(str(out))}\n[split]\ntrain = 1.0\nvalidation = 0.0\n'
            "test = 0.0\n"
        )
    else:
        text = (
            f"inputs:\n  - path: {json.dumps(src)}\n    formats: [pi]\nparquet: false\ninstall_dir: /opt/pi\n"
            f"out: {json.dumps(str(out))}\nsplit:\n  train: 1.0\n  validation: 0.0\n  test: 0.0\n"
        )
    config = tmp_path / f"build.{kind}"
    config.write_text(text)
    result = CliRunner().invoke(app, ["build", str(config)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["read"] == manifest["counts"]["kept"] == 1
    assert manifest["config"]["install_dir"] == "/opt/pi"
    assert (out / "conversations" / "train.jsonl").read_text().count("\n") == 1
