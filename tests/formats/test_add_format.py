"""Adding a source format is one folder (a reader and a mapping) and one registry entry: a toy format written into a
temporary package converts end to end, with the base reader's streaming, bad-line rejections and error handling."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from harnessfit.convert import convert, validate_conversation
from harnessfit.formats.registry import FORMATS, Format, detect_format
from harnessfit.harness.card import load_card

READER = '''
from harnessfit.core import Reason, Rejection, Step, ToolCall
from harnessfit.formats.base import BaseTraceReader
from harnessfit.formats.reading import first_json_line


class ToyReader(BaseTraceReader):
    """A toy log: a header line {"toy": 1, "cwd": ...}, then {"who": "user"|"agent"|"result", ...} lines."""

    name = "toy"

    def detect(self, path):
        head = first_json_line(path)
        return isinstance(head, dict) and head.get("toy") == 1

    def read_file(self, path, sha):
        steps, cwd, lost = [], None, False
        for item in self.json_lines(path, sha):
            if isinstance(item, Rejection):  # a bad line: pass its rejection on
                lost = True
                yield item
                continue
            row = item.value
            if "toy" in row:
                cwd = row.get("cwd")
            elif row["who"] == "boom":
                raise RuntimeError("the toy reader cannot read this")
            elif row["who"] == "user":
                steps.append(Step(role="user", text=row["text"]))
            elif row["who"] == "agent":
                calls = [ToolCall(id=c["id"], name=c["run"], arguments=c["args"]) for c in row.get("calls", [])]
                steps.append(Step(role="assistant", text=row.get("text"), tool_calls=calls))
            else:
                steps.append(Step(role="tool", tool_call_id=row["id"], text=row["out"]))
        if not steps:
            yield self.reject(path, sha, Reason.empty, "no toy lines", "write some")
            return
        yield self.trajectory(path, sha, key="log", steps=steps, cwd=cwd, date="2026-02-03",
                              flags=["lines_lost"] if lost else [])
'''

MAPPING = '''
from harnessfit.formats.base import PiCall, unsupported
from harnessfit.harness.pi_results import pi_bash_result


class ToyMapping:
    """The toy ``sh`` tool is Pi's bash; its results are the merged output."""

    def map_call(self, call, result, ctx):
        if call.name != "sh":
            return unsupported(call.name)
        text = None if result is None else pi_bash_result(ctx.card, result.text or "", 0)
        return PiCall("bash", {"command": call.arguments["cmd"]}, text, ("toy.sh->bash",))
'''


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def toy_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "pkgs" / "toyfmt"  # the one folder
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""A toy format."""\n', encoding="utf-8")
    (pkg / "reader.py").write_text(textwrap.dedent(READER), encoding="utf-8")
    (pkg / "mapping.py").write_text(textwrap.dedent(MAPPING), encoding="utf-8")
    monkeypatch.syspath_prepend(str(pkg.parent))
    monkeypatch.setitem(FORMATS, "toy", Format("toyfmt.reader:ToyReader", "toyfmt.mapping:ToyMapping"))  # one line


def test_a_toy_format_converts_end_to_end(toy_format: None, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    good = _jsonl(
        tmp_path / "in" / "good.log",
        [
            {"toy": 1, "cwd": "/work/toy"},
            {"who": "user", "text": "List the files."},
            {"who": "agent", "text": "Listing.", "calls": [{"id": "c1", "run": "sh", "args": {"cmd": "ls"}}]},
            {"who": "result", "id": "c1", "out": "a.py\nb.py"},
            {"who": "agent", "text": "There are two files: a.py and b.py."},
        ],
    )
    holey = tmp_path / "in" / "holey.log"
    holey.write_text('{"toy": 1}\n{"who": "user", "text": "hi"}\n{not json\n{"who": "agent", "text": "Hello."}\n')
    _jsonl(tmp_path / "in" / "boom.log", [{"toy": 1}, {"who": "user", "text": "x"}, {"who": "boom"}])
    assert detect_format(good) == "toy"

    card = load_card("pi", "0.73.1")
    summary = convert([tmp_path / "in"], tmp_path / "out", card)
    (conv,) = [json.loads(x) for x in (tmp_path / "out" / "conversations.jsonl").read_text().splitlines()]
    assert conv["meta"]["source"] == "toy" and conv["meta"]["file"] == "in/good.log"
    assert validate_conversation(conv, card) == []
    assert conv["messages"][2]["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"command":"ls"}'}
    assert conv["messages"][3] == {"role": "tool", "content": "a.py\nb.py", "tool_call_id": "c1"}
    assert "toy.sh->bash" in conv["meta"]["transformations"]

    ledger = [json.loads(x) for x in (tmp_path / "out" / "ledger.jsonl").read_text().splitlines()]
    by_file = {(r["file"], r["reason"]) for r in ledger}
    # the base reader: a bad line is its own row (and the gate rejects the holey trajectory); an exception in
    # read_file becomes one parse_error row for the unit
    assert by_file == {("in/holey.log", "parse_error"), ("in/boom.log", "parse_error")}
    assert sum(r["file"] == "in/holey.log" for r in ledger) == 2
    (boom,) = [r for r in ledger if r["file"] == "in/boom.log"]
    assert boom["detail"].startswith("reader toy failed after 0 record(s): RuntimeError")
    assert summary.read == summary.accepted + summary.rejected == 4
