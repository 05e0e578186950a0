"""The shared nouns: the one JSONL reader's options (raise / skip / report, line cap, tolerant reading) and the one
Rejection builder (trajectory, conversation, file)."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from harnessfit.core import Conversation, ConversationMeta, Provenance, Reason, Trajectory, content_id, reject
from harnessfit.core.jsonio import BadLine, JsonLine, iter_jsonl, read_jsonl

LINES = b'{"a": 1}\n\n[2]\n{broken\n\xff\xfe\n' + b'"' + b"x" * 40 + b'"\n{"b": 3}\n{"cut'


def test_iter_jsonl_reports_every_bad_line_with_its_kind() -> None:
    items = list(iter_jsonl(io.BytesIO(LINES), max_line_bytes=30, bad_lines="report"))
    assert items[:2] == [JsonLine(1, {"a": 1}), JsonLine(3, [2])]
    bad = [(i.lineno, i.kind) for i in items if isinstance(i, BadLine)]
    assert bad == [(4, "invalid_json"), (5, "not_utf8"), (6, "too_long"), (8, "truncated")]
    assert items[5] == JsonLine(7, {"b": 3})
    assert "line 6 is 43 bytes (limit 30)" in items[4].detail


def test_read_jsonl_raises_or_skips(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(LINES)
    with pytest.raises(orjson.JSONDecodeError):
        list(read_jsonl(path))
    assert list(read_jsonl(path, bad_lines="skip")) == [{"a": 1}, [2], "x" * 40, {"b": 3}]
    # the tolerant reading an eval episode's files get (a killed process may cut the last line)
    assert list(read_jsonl(path, bad_lines="skip", objects_only=True, missing_ok=True)) == [{"a": 1}, {"b": 3}]
    assert list(read_jsonl(tmp_path / "absent.jsonl", missing_ok=True)) == []
    with pytest.raises(FileNotFoundError):
        list(read_jsonl(tmp_path / "absent.jsonl"))


def test_one_rejection_builder_for_every_subject() -> None:
    traj = Trajectory(id="t", source="pi", steps=[], root_request_id="r",
                      provenance=Provenance(format="pi", file="pi/a.jsonl", sha256="s", line_start=2, line_end=9))
    r = reject(traj, Reason.empty, "d", "h")
    assert (r.record_id, r.source, r.file, r.line_start, r.line_end, r.kept_id) == ("t", "pi", "pi/a.jsonl", 2, 9, None)
    meta = ConversationMeta(source="codex", file="c.jsonl", sha256="s", line_start=1, line_end=3, root_request_id="r",
                            card="pi-0.73.1", cwd="/w", date="2026-01-01")
    conv = Conversation(id="c1", messages=[], tools=[], meta=meta)
    r = reject(conv, Reason.duplicate_exact, "same", "none", kept_id="c0")
    assert (r.record_id, r.source, r.file, r.line_end, r.kept_id) == ("c1", "codex", "c.jsonl", 3, "c0")
    assert reject(meta, Reason.duplicate_near, "d", "h", record_id="c2").record_id == "c2"
    with pytest.raises(ValueError):
        reject(meta, Reason.duplicate_near, "d", "h")
    r = reject(Path("x/y.log"), Reason.parse_error, "d", "h", source="toy", sha256="abc", line_start=4, line_end=4)
    assert r.record_id == content_id("reject", "toy", "abc", "parse_error", "4", "4") and r.file == "x/y.log"
    with pytest.raises(ValueError):
        reject(Path("x"), Reason.parse_error, "d", "h")
