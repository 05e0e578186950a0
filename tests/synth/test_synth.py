"""synth records real Pi v3 session files: golden solutions and double-encoded-then-recovered contrasts."""

from __future__ import annotations

import orjson
import pytest
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.core.jsonio import sha256_file
from harnessfit.formats.pi.reader import sent_arguments

pytestmark = [pytest.mark.pi, pytest.mark.slow]


def _lines(path):
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def test_synth_writes_pi_sessions(pi_installed, small_suite, tmp_path):
    out = tmp_path / "synth"
    res = CliRunner().invoke(app, ["synth", "--suite", str(small_suite), "--out", str(out), "--workers", "2"])
    assert res.exit_code == 0, res.output
    manifest = orjson.loads((out / "manifest.json").read_bytes())
    kinds = sorted((f["kind"], f["task"]) for f in manifest["files"])
    assert kinds == [
        ("contrast", "create_hello_script"),
        ("contrast", "recover_missing_config"),
        ("golden", "create_hello_script"),
        ("golden", "recover_missing_config"),
    ]
    assert manifest["skipped"] == []
    for row in manifest["files"]:
        path = out / row["path"]
        assert sha256_file(path) == row["sha256"]
        rows = _lines(path)
        assert rows[0]["type"] == "session" and rows[0]["version"] == 3
        # the working folder is named independently of where the episode ran (the dataset must not depend on it)
        assert rows[0]["cwd"] == f"/workspace/{row['task']}/seed-{row['seed']}"
        assert str(tmp_path).encode() not in path.read_bytes()
        msgs = [r["message"] for r in rows if r["type"] == "message"]
        assert all("id" in r and "parentId" in r for r in rows[1:])
        if msgs and msgs[0]["role"] == "system":  # Pi 1.x keeps the system prompt in the session (card.session)
            msgs = msgs[1:]
        assert msgs[0]["role"] == "user" and msgs[-1]["role"] == "assistant" and msgs[-1]["stopReason"] == "stop"
        calls = [p for m in msgs if m["role"] == "assistant" for p in m["content"] if p["type"] == "toolCall"]
        errors = [m for m in msgs if m["role"] == "toolResult" and m["isError"]]
        if row["kind"] == "golden":
            assert all(isinstance(c["arguments"], dict) for c in calls)
            # only the recover task's planted failure (a failing validation run) is an error result
            assert all(
                e["toolName"] == "bash" and "Command exited with code 1" in e["content"][0]["text"] for e in errors
            )
            assert bool(errors) == (row["task"] == "recover_missing_config")
        else:
            # first call stringified, Pi's refusal, then the same call as an object (Pi 1.x stores the text it could
            # not parse in argumentsError; sent_arguments reads both layouts)
            first = sent_arguments(calls[0])
            assert isinstance(first, str) and isinstance(calls[1]["arguments"], dict)
            assert errors[0]["content"][0]["text"].startswith(
                ("Validation failed for tool", "Invalid arguments for tool")
            )
            assert orjson.loads(first) == calls[1]["arguments"]
    golden_create = next(f for f in manifest["files"] if f["kind"] == "golden" and f["task"] == "create_hello_script")
    msgs = [r for r in _lines(out / golden_create["path"]) if r["type"] == "message"]
    assert sum(1 for r in msgs if r["message"]["role"] == "assistant") == 3  # write, validate, answer: ends promptly


def test_synth_twice_writes_the_same_bytes(pi_installed, small_suite, tmp_path):
    """Pi writes a fresh session id, random entry ids, wall-clock times and durations into every session; the kept
    copy pins them (``synth.session_copy``), so two runs of the same tasks on the same day give identical files."""
    digests = []
    for n in (1, 2):
        out = tmp_path / f"synth-{n}"
        res = CliRunner().invoke(app, ["synth", "--suite", str(small_suite), "--out", str(out), "--workers", "2"])
        assert res.exit_code == 0, res.output
        manifest = orjson.loads((out / "manifest.json").read_bytes())
        digests.append(sorted((f["path"], f["sha256"]) for f in manifest["files"]))
    assert digests[0] == digests[1] and len(digests[0]) == 4
