"""Every byte a build writes goes through redaction, not only the conversations: the ledger (whose details quote
rejected calls' arguments), its summary, the manifest (input paths), the card; file paths lose the user name too,
also where Pi and Claude Code encode the working folder into a session folder's name (``--home-<user>-<proj>--``).
What is kept verbatim (the harness install folder the system prompt names) is said in the card, with why."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from _helpers.pi_sessions import Session
from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.dataset.verify import verify_dataset

_A = "q7Rw2Xk9Lm4Tz8Vb3Nc6Hy1Jd5Fs0Gp"  # a mixed-class filler, sliced to length
USER = "carol"
INSTALL = f"/home/{USER}/.cache/harnessfit/harness/pi/0.73.1/node_modules/@mariozechner/pi-coding-agent"


def every_output_text(out: Path) -> dict[str, str]:
    """Each output file as text: JSON and JSONL decoded (so an escaped secret is seen as written), Parquet read
    row by row with its JSON text cells decoded, everything else as UTF-8."""
    texts = {}
    for p in sorted(out.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(out).as_posix()
        if p.suffix == ".parquet":
            rows = pq.read_table(p).to_pylist()
            cells = [v for row in rows for v in row.values() if isinstance(v, str)]
            decoded = []
            for c in cells:
                try:
                    decoded.append(json.dumps(json.loads(c), ensure_ascii=False))
                except ValueError:
                    decoded.append(c)
            texts[rel] = "\n".join(cells + decoded + [_strings(json.loads(d)) for d in decoded if d[:1] in '[{"'])
            continue
        raw = p.read_text(encoding="utf-8")
        parts = [raw]
        if p.suffix in (".json", ".jsonl"):
            for line in raw.splitlines() if p.suffix == ".jsonl" else [raw]:
                if line.strip():
                    parts.append(_strings(json.loads(line)))
        texts[rel] = "\n".join(parts)
    return texts


def _strings(value) -> str:
    """Every string (keys too) inside a JSON value, and the strings of JSON text inside them, newline-joined."""
    out: list[str] = []

    def walk(v):
        if isinstance(v, str):
            out.append(v)
            if v[:1] in "[{":
                try:
                    walk(json.loads(v))
                except ValueError:
                    pass
        elif isinstance(v, dict):
            for k, x in v.items():
                out.append(k)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return "\n".join(out)


def _chunks(secret: str, prefix: str = "", n: int = 12) -> list[str]:
    """Every n-character piece of a secret after its fixed prefix: a cut-off secret leaks one of them."""
    body = secret[len(prefix) :]
    return [body[i : i + n] for i in range(0, len(body) - n + 1)]


def test_ledger_manifest_card_and_paths_are_redacted_too(tmp_path):
    github = "ghp_" + (_A * 2)[:36]
    openai = "sk-proj-" + (_A * 2)[:48]
    sessions = tmp_path / "sessions"
    folder = sessions / f"--home-{USER}-proj--"  # how Pi names a session folder after its cwd
    good = Session(cwd=f"/home/{USER}/proj")
    good.user("Fix the failing test in app.py")
    good.call("c1", "read", {"path": f"/home/{USER}/proj/app.py"})
    good.result("c1", "read", "def f():\n    return 1\n")
    good.answer("Fixed: f returns 1 now.")
    good.write(folder / "2026-11-30_good.jsonl")
    # a call whose arguments Pi could not parse: the ledger quotes them, cut after 80 characters; here the cut
    # falls inside the OpenAI key, and the GitHub token is whole before it
    raw = f'{{"command": "t {github} k={openai}'
    assert 52 < raw.index("sk-proj-") < 60  # 12-19 characters of its body before the cut: too few to detect
    bad = Session(cwd=f"/home/{USER}/proj")
    bad.user("Deploy it")
    bad.call("c1", "bash", {}, raw=raw)
    bad.result("c1", "bash", "Invalid arguments", error=True)
    bad.answer("Could not deploy.")
    bad.write(folder / "2026-11-30_bad.jsonl")

    out = tmp_path / "ds"
    build_dataset(config_from_values(inputs=[str(sessions)], install_dir=INSTALL), tmp_path, out=out)
    m = json.loads((out / "manifest.json").read_text())
    assert m["counts"]["kept"] == 1 and m["counts"]["rejected_convert"] == 1, m["counts"]
    texts = every_output_text(out)
    assert "ledger.jsonl" in texts and "parquet/sft/train.parquet" in texts
    leaks = [
        (rel, piece)
        for rel, text in texts.items()
        for piece in [*_chunks(github, "ghp_"), *_chunks(openai, "sk-proj-")]
        if piece in text
    ]
    assert not leaks, leaks[:5]
    # the user name is gone from every file, except inside the install folder, which is kept verbatim
    named = [rel for rel, text in texts.items() if USER in text.replace(INSTALL, "")]
    assert not named, [
        (rel, texts[rel][max(0, texts[rel].replace(INSTALL, "").find(USER) - 60) :][:120]) for rel in named
    ]
    conv = json.loads((out / "conversations" / "train.jsonl").read_text().splitlines()[0])
    assert conv["meta"]["file"] == "sessions/--home-user1-proj--/2026-11-30_good.jsonl"
    assert all(
        r["path"].endswith(("--home-user1-proj--/2026-11-30_bad.jsonl", "--home-user1-proj--/2026-11-30_good.jsonl"))
        for r in m["inputs"]
    )
    # the card says what was kept verbatim and why
    card = (out / "README.md").read_text()
    assert "Kept verbatim" in card and INSTALL in card and "--install-dir" in card
    assert "ledger" in card.split("## Redaction")[1]
    # and verify rebuilds the same bytes, redacted paths included
    res = verify_dataset(out)
    assert res.ok, res.message()
