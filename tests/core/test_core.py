"""The shared nouns: the one JSONL reader's options (raise / skip / report, line cap, tolerant reading) and the one
Rejection builder (trajectory, conversation, file)."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from harnessfit.core import Conversation, ConversationMeta, Provenance, Reason, Trajectory, content_id, reject
from harnessfit.core.jsonio import read_jsonl
from harnessfit.core.jsonl import BadLine, JsonLine, iter_jsonl

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
    traj = Trajectory(
        id="t",
        source="pi",
        steps=[],
        root_request_id="r",
        provenance=Provenance(format="pi", file="pi/a.jsonl", sha256="s", line_start=2, line_end=9),
    )
    r = reject(traj, Reason.empty, "d", "h")
    assert (r.record_id, r.source, r.file, r.line_start, r.line_end, r.kept_id) == ("t", "pi", "pi/a.jsonl", 2, 9, None)
    meta = ConversationMeta(
        source="codex",
        file="c.jsonl",
        sha256="s",
        line_start=1,
        line_end=3,
        root_request_id="r",
        card="pi-0.73.1",
        cwd="/w",
        date="2026-01-01",
    )
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


RECORDS = [{"a": 1, "b": {"c": [1, 2, {"d": 'x"y}'}]}}, {"e": "f\\n"}, {"g": []}, {"h": {}}]


def _layouts() -> dict[str, bytes]:
    import json

    one = b"".join(json.dumps(r).encode() + b"\n" for r in RECORDS)
    pretty = b"".join(json.dumps(r, indent=2).encode() + b"\n" for r in RECORDS)
    return {
        "one per line": one,
        "pretty-printed": pretty,
        "indent 0": b"".join(json.dumps(r, indent=0).encode() + b"\n" for r in RECORDS),
        "array on one line": json.dumps(RECORDS).encode(),
        "pretty array": json.dumps(RECORDS, indent=2).encode() + b"\n",
        "CRLF": pretty.replace(b"\n", b"\r\n"),
        "CRLF array": json.dumps(RECORDS, indent=1).encode().replace(b"\n", b"\r\n"),
        "no newline between": b"".join(json.dumps(r).encode() for r in RECORDS),
        "BOM": b"\xef\xbb\xbf" + one,
    }


@pytest.mark.parametrize("layout", list(_layouts()))
def test_iter_jsonl_reads_every_layout(layout: str) -> None:
    items = list(iter_jsonl(io.BytesIO(_layouts()[layout]), max_line_bytes=1 << 20, bad_lines="report"))
    assert [i.value for i in items] == RECORDS, items
    assert all(isinstance(i, JsonLine) for i in items)


def test_a_broken_line_costs_only_itself_and_records_say_where_they_start() -> None:
    text = b'{\n  "a": 1\n}\n{"b": 2,\n{"c": 3}\n[1,\n  2]\n{"d": "unterminated\n{"e": 5}\n'
    items = list(iter_jsonl(io.BytesIO(text), bad_lines="report"))
    assert [(i.lineno, i.value if isinstance(i, JsonLine) else i.kind) for i in items] == [
        (1, {"a": 1}),
        (4, "invalid_json"),
        (5, {"c": 3}),
        (6, [1, 2]),
        (8, "invalid_json"),
        (9, {"e": 5}),
    ]
    # a file that ends inside a pretty-printed record: one truncated record, not a row per inner line
    cut = b'{"a": 1}\n{\n  "b": {\n    "c": 1\n'
    items = list(iter_jsonl(io.BytesIO(cut), bad_lines="report"))
    assert [(i.lineno, getattr(i, "kind", None)) for i in items] == [(1, None), (2, "truncated")]
    assert "lines 2-4" in items[1].detail


def test_the_record_limit_bounds_every_layout() -> None:
    big = {"x": "y" * 100}
    for text in (json_bytes(big) + b"\n", json_bytes(big, indent=2) + b"\n", b"[" + json_bytes(big) + b"]"):
        items = list(iter_jsonl(io.BytesIO(text + b'{"ok": 1}\n'), max_line_bytes=60, bad_lines="report"))
        kinds = [getattr(i, "kind", None) for i in items]
        assert kinds[0] == "too_long", (text, items)
        assert "limit 60" in items[0].detail
    items = list(
        iter_jsonl(io.BytesIO(json_bytes(big, indent=2) + b'\n{"ok": 1}\n'), max_line_bytes=60, bad_lines="report")
    )
    assert items[-1] == JsonLine(4, {"ok": 1}) and "lines 1-3" in items[0].detail
    with pytest.raises(ValueError, match="limit 60"):
        list(iter_jsonl(io.BytesIO(json_bytes(big, indent=2)), max_line_bytes=60))


def test_first_json_line_is_the_first_record_of_any_layout(tmp_path: Path) -> None:
    from harnessfit.formats.reading import first_json_line

    for name, data in _layouts().items():
        p = tmp_path / "x.jsonl"
        p.write_bytes(data)
        assert first_json_line(p) == RECORDS[0], name
    p.write_bytes(b"not json\n")
    assert first_json_line(p) is None


def json_bytes(value: object, indent: int | None = None) -> bytes:
    import json

    return json.dumps(value, indent=indent).encode()


def test_normalise_prompt_collapses_exactly_the_regex_whitespace() -> None:
    import re
    import sys

    from harnessfit.core.ids import normalise_prompt

    spaces = [c for c in map(chr, range(sys.maxunicode + 1)) if re.fullmatch(r"\s", c)]
    assert spaces == [c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace()]
    for text in [
        "",
        "  A  b\t\nC ",
        "x\u00a0y\u2028z\u3000",
        "".join(spaces) + "Q" + "".join(spaces),
        "".join(map(chr, range(0x3100))),
    ]:
        assert normalise_prompt(text) == re.sub(r"\s+", " ", text).strip().lower()
