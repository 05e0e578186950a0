"""A planted-secrets build: a Pi session holding 50 secrets of 25 kinds — in the user's text, tool-call arguments,
tool results, JSON text inside arguments, calls Pi could not parse (the session is rejected and the ledger quotes
them) and the session file's path — is built with ``harnessfit build``; every output file (JSONL, JSON, Markdown,
Parquet read cell by cell, anything else as text) is searched for every secret and every 12-character piece of one
(a cut-off secret leaks a piece): zero survivors."""

from __future__ import annotations

import json
from pathlib import Path

from test_side_doors import every_output_text
from typer.testing import CliRunner

from _helpers.pi_sessions import Session
from harnessfit.cli import app
from harnessfit.dataset.probe import planted_secret_lines

PIECE = 12


def _pieces(secret: str) -> list[str]:
    if len(secret) <= PIECE:
        return [secret]
    return [p for p in (secret[i : i + PIECE] for i in range(len(secret) - PIECE + 1)) if "\n" not in p]


def test_no_planted_secret_survives_in_any_output_file(tmp_path: Path) -> None:
    planted = planted_secret_lines(n_per_kind=2, seed=29)
    assert len(planted) >= 25 and len({k for k, _, _ in planted}) >= 12
    lines = iter(planted)
    where: dict[str, list[str]] = {}

    def take(place: str) -> str:
        kind, line, _secret = next(lines)
        where.setdefault(place, []).append(kind)
        return line

    # the rejected session: a call whose arguments Pi could not parse, quoted by the ledger
    bad = Session(cwd="/work/app")
    bad.user("Deploy it")
    bad.call("c1", "bash", {}, raw='{"command": "deploy ' + take("rejected call") + " && " + take("rejected call"))
    bad.result("c1", "bash", "Invalid arguments", error=True)
    bad.answer("Could not deploy.")
    # the kept session: secrets in prompts, arguments, JSON inside arguments and results
    good = Session(cwd="/work/app")
    good.user("Set up the deploy. My notes:\n" + take("user text"))
    turn = 0
    while True:
        try:
            command = take("arguments")
            document = json.dumps({"service": "api", "settings": take("JSON inside arguments")})
            output = take("results")
            prompt = take("user text")
        except StopIteration:
            break
        good.call(f"b{turn}", "bash", {"command": f"cd /work/app && {command}"})
        good.result(f"b{turn}", "bash", output)
        good.call(f"w{turn}", "write", {"path": f"config/{turn}.json", "content": document})
        good.result(f"w{turn}", "write", f"Successfully wrote {len(document)} bytes to config/{turn}.json")
        good.user(prompt)
        turn += 1
    good.answer("Done: the deploy is set up.")
    secrets = [s for _, _, s in planted]
    # the session files' paths hold secrets too (a folder named after a token, a file named after a key)
    path_secrets = [s for k, _, s in planted if k in ("github", "huggingface")][:2]
    folder = tmp_path / "in" / f"deploy-{path_secrets[0]}"
    good.write(folder / f"session-{path_secrets[1]}.jsonl")
    bad.write(folder / "rejected.jsonl")
    assert set(where) == {"rejected call", "user text", "arguments", "JSON inside arguments", "results"}

    out = tmp_path / "ds"
    # the session's result texts are Pi 0.73.1's (write: "Successfully wrote N bytes to …"), so it is built for that Pi
    res = CliRunner().invoke(
        app,
        [
            "build",
            "--inputs",
            str(tmp_path / "in"),
            "--out",
            str(out),
            "--install-dir",
            "/opt/pi",
            "--harness",
            "pi@0.73.1",
        ],
    )
    assert res.exit_code == 0, res.output
    m = json.loads((out / "manifest.json").read_text())
    assert m["counts"]["kept"] == 1 and m["counts"]["rejected_convert"] == 1, m["counts"]
    texts = every_output_text(out)
    assert {"ledger.jsonl", "manifest.json", "README.md"} <= texts.keys(), sorted(texts)
    assert any(rel.endswith(".parquet") for rel in texts), sorted(texts)
    # the placeholders stand where the secrets were, so the search below looks at the right text
    convs = "".join(t for rel, t in texts.items() if rel.startswith("conversations/"))
    assert convs.count("REDACTED_") >= 40 and "REDACTED_" in texts["ledger.jsonl"]
    raw = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    leaks = sorted(
        {
            (rel, s[:16])
            for s in secrets
            for piece in _pieces(s)
            for rel in raw
            if piece in texts.get(rel, "") or piece.encode() in raw[rel]
        }
    )
    assert not leaks, leaks[:10]
