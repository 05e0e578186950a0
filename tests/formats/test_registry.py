"""Reader registry: all six formats registered, detection by content, deterministic walk, unknown files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harnessfit.core.rejection import Reason, Rejection
from harnessfit.errors import UserError
from harnessfit.formats.registry import FORMATS, detect_format, get_reader, iter_units, read_unit


def test_all_six_formats_registered_in_detection_order():
    assert list(FORMATS) == ["pi", "claude_code", "codex", "swe_agent", "openhands", "openai_chat"]


def test_detection_is_by_content_not_file_name(traces_dir: Path, tmp_path: Path):
    pi = tmp_path / "renamed.txt"
    shutil.copyfile(traces_dir / "pi" / "kvsankar__agent-history__session-01.jsonl", pi)
    claude = tmp_path / "session.data"
    shutil.copyfile(traces_dir / "claude_code" / "marot__spotter__short.jsonl", claude)
    assert detect_format(pi) == "pi"
    assert detect_format(claude) == "claude_code"
    assert detect_format(claude, formats=["pi"]) is None


def test_unknown_file_is_one_unknown_format_rejection(tmp_path: Path):
    (tmp_path / "notes.md").write_text("# not a trace\n", encoding="utf-8")
    units = iter_units([tmp_path])
    assert [u.label for u in units] == [f"{tmp_path.name}/notes.md"]
    records = list(read_unit(units[0]))
    assert len(records) == 1 and isinstance(records[0], Rejection)
    assert records[0].reason == Reason.unknown_format
    assert records[0].file == f"{tmp_path.name}/notes.md"


def test_walk_is_sorted_and_deduplicated(traces_dir: Path):
    a = iter_units([traces_dir / "pi", traces_dir / "claude_code", traces_dir / "pi"])
    b = iter_units([traces_dir / "claude_code", traces_dir / "pi"])
    assert [u.label for u in a] == [u.label for u in b]
    assert [u.label for u in a] == sorted(u.label for u in a)
    assert [u.index for u in a] == list(range(len(a)))


def test_missing_input_and_unknown_format_are_user_errors(tmp_path: Path):
    with pytest.raises(UserError, match="input not found"):
        iter_units([tmp_path / "nope"])
    with pytest.raises(UserError, match="unknown trace format"):
        get_reader("emacs")
