"""Builds on the real traces (read from traces_dir, never copied into the repo)."""

import json
import shutil
from pathlib import Path

import pytest
from test_redact import _secret_of, planted_secrets
from typer.testing import CliRunner

from harnessfit.cli import app
from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.dataset.verify import verify_dataset

PI_LARGE = "pi/badlogic__pi-mono__large-session.jsonl"


def _all_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _pi_head(traces_dir: Path, dest: Path, cut: int = 25) -> Path:
    """The first ``cut`` lines of the Pi author's session (it ends on a final answer there): small, real."""
    lines = (traces_dir / PI_LARGE).read_bytes().splitlines(keepends=True)[:cut]
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(b"".join(lines))
    return dest


def test_planted_secrets_in_a_real_trace_are_all_gone(tmp_path, traces_dir):
    src = _pi_head(traces_dir, tmp_path / "in" / "session.jsonl")
    secrets = planted_secrets(seed=11)
    out_lines, k = [], 0
    for line in src.read_text(encoding="utf-8").splitlines():
        e = json.loads(line)
        msg = e.get("message") if e.get("type") == "message" else None
        # secrets go where the environment's or the user's text is: an edit or write result is Pi's own sentence,
        # and one with text appended is a text no Pi writes (unknown_pi_text), never kept
        if (
            msg
            and msg["role"] in ("user", "toolResult")
            and isinstance(msg.get("content"), list)
            and msg.get("toolName") not in ("edit", "write")
        ):
            for block in msg["content"]:
                if block.get("type") == "text" and k < len(secrets):
                    take = secrets[k : k + 5] if msg["role"] == "toolResult" else secrets[k : k + 2]
                    block["text"] += "\n" + "\n".join(t for _, t in take)
                    k += len(take)
        out_lines.append(json.dumps(e, ensure_ascii=False))
    assert k >= 30, k
    src.write_text("\n".join(out_lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    build_dataset(config_from_values(inputs=[str(src)]), tmp_path, out=out)
    m = json.loads((out / "manifest.json").read_text())
    assert m["counts"]["kept"] == 1, m["counts"]
    assert sum(m["redaction"]["found"].values()) >= 30
    blobs = _all_bytes(out)
    import pyarrow.parquet as pq

    for rel in [r for r in blobs if r.endswith(".parquet")]:
        blobs[rel] = json.dumps(pq.read_table(out / rel).to_pylist()).encode()
    planted = [_secret_of(t) for _, t in secrets[:k]]
    leaks = [(s, rel) for s in planted for rel, b in blobs.items() if s.encode() in b]
    assert not leaks, leaks[:3]
    # the session's home folder (/Users/<name>) is gone; the GitHub org in URLs is not a home path and stays
    jsonl = [b for rel, b in blobs.items() if rel.endswith(".jsonl")]
    assert all(b"/Users/badlogic" not in b for b in jsonl)
    assert any(b"/Users/user1/" in b for b in jsonl)


def test_worker_count_does_not_change_bytes(tmp_path, traces_dir):
    inputs = [
        str(traces_dir / "openai_chat"),
        str(traces_dir / "claude_code"),
        str(_pi_head(traces_dir, tmp_path / "in" / "pi.jsonl")),
    ]
    for w, name in ((1, "a"), (2, "b")):
        (tmp_path / name).mkdir()
        build_dataset(config_from_values(inputs=inputs, workers=w), tmp_path, out=tmp_path / name / "out")
    a, b = _all_bytes(tmp_path / "a" / "out"), _all_bytes(tmp_path / "b" / "out")
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []
    assert json.loads(a["manifest.json"])["counts"]["kept"] > 10


@pytest.mark.slow
def test_build_on_shared_traces_then_verify_then_tamper(tmp_path, traces_dir):
    out = tmp_path / "ds"
    r = CliRunner().invoke(app, ["build", "--inputs", str(traces_dir), "--out", str(out)])
    assert r.exit_code == 0, r.output
    for rel in (
        "manifest.json",
        "README.md",
        "ledger.jsonl",
        "conversations/train.jsonl",
        "sft/train.jsonl",
        "decision_points/validation.jsonl",
        "parquet/conversations/train.parquet",
    ):
        assert (out / rel).is_file(), rel
    m = json.loads((out / "manifest.json").read_text())
    assert m["splits"]["group_overlap"] == 0 and m["counts"]["kept"] > 0
    assert (
        m["counts"]["kept"]
        + m["counts"]["rejected_convert"]
        + m["counts"]["duplicate_exact"]
        + m["counts"]["duplicate_near"]
        == m["counts"]["read"]
    )
    r = CliRunner().invoke(app, ["verify", str(out)])
    assert r.exit_code == 0 and r.output.strip().startswith("OK"), r.output
    # change one byte inside the 3rd record of validation conversations
    target = out / "conversations" / "validation.jsonl"
    lines = target.read_bytes().splitlines(keepends=True)
    rec_id = json.loads(lines[2])["id"]
    i = lines[2].index(b'"content":"') + len(b'"content":"')
    lines[2] = lines[2][:i] + (b"X" if lines[2][i : i + 1] != b"X" else b"Y") + lines[2][i + 1 :]
    target.write_bytes(b"".join(lines))
    res = verify_dataset(out)
    assert not res.ok and res.file == "conversations/validation.jsonl" and res.record_id == rec_id and res.position == 3
    r = CliRunner().invoke(app, ["verify", str(out)])
    assert r.exit_code == 1 and rec_id in r.output


def test_verify_reports_a_changed_input_in_one_line(tmp_path, traces_dir):
    src = _pi_head(traces_dir, tmp_path / "in" / "s.jsonl")
    out = tmp_path / "out"
    build_dataset(config_from_values(inputs=[str(src)], parquet=False), tmp_path, out=out)
    assert verify_dataset(out).ok
    src.write_bytes(src.read_bytes() + b"\n")
    r = CliRunner().invoke(app, ["verify", str(out)], standalone_mode=True)
    assert r.exit_code != 0
    from harnessfit.errors import UserError

    with pytest.raises(UserError, match="input changed"):
        verify_dataset(out)
    src.unlink()
    with pytest.raises(UserError, match="input missing"):
        verify_dataset(out)
    shutil.rmtree(tmp_path / "in")
