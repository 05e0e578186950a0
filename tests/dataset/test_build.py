import json
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from _helpers.conversations import corpus, make_conv
from harnessfit.cli import app
from harnessfit.core.rejection import Reason, Rejection
from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import BuildConfig, config_from_values, load_build_config
from harnessfit.dataset.exports import decision_points, sft_records
from harnessfit.errors import UserError


def _items():
    convs = corpus(12)
    twin = make_conv(
        convs[0].messages[1]["content"][0]["text"],
        [
            ("read", {"path": "m0.py"}, "def f0():\n    return 0 * 0 + 0\n" * 3),
            ("bash", {"command": "pytest -q tests/test_m0.py --seed 0"}, "0 passed in 0.0s"),
        ],
        answer="Fixed m0 variant 0: changed the return value to 0.",
        salt="twin",
    )
    rej = Rejection(
        record_id="bad1",
        source="pi",
        file="pi/x.jsonl",
        reason=Reason.unsupported_tool,
        detail="tool 'browse' has no Pi equivalent",
        repair_hint="drop the tool",
    )
    return [*convs[:6], rej, twin, *convs[6:]]


def _cfg(tmp_path: Path, **kw) -> BuildConfig:
    inp = tmp_path / "in"
    inp.mkdir(exist_ok=True)
    (inp / "placeholder.txt").write_text("inputs are given as items in this test\n")
    return config_from_values(inputs=[str(inp)], **kw)


def test_build_from_conversations_writes_every_export(tmp_path):
    out = tmp_path / "out"
    rep = build_dataset(_cfg(tmp_path), tmp_path, out=out, items=_items())
    m = json.loads((out / "manifest.json").read_text())
    c = m["counts"]
    assert c["read"] == 14 and c["kept"] == 12 and c["rejected_convert"] == 1 and c["duplicate_exact"] == 1
    ledger = [json.loads(x) for x in (out / "ledger.jsonl").read_text().splitlines()]
    dup = next(r for r in ledger if r["reason"] == "duplicate_exact")
    assert dup["kept_id"] == corpus(1)[0].id
    assert m["splits"]["group_overlap"] == 0
    groups = {}
    for split in m["splits"]["per_split"]:
        for line in (out / "conversations" / f"{split}.jsonl").read_text().splitlines():
            rec = json.loads(line)
            assert list(rec) == ["id", "messages", "tools", "meta"]
            assert groups.setdefault(rec["meta"]["root_request_id"], split) == split
    assert m["splits"]["per_split"]["validation"]["conversations"] > 0
    # fast-path lines are exactly the pydantic records' bytes
    split0 = next(iter(m["splits"]["per_split"]))
    conv = json.loads((out / "conversations" / f"{split0}.jsonl").read_text().splitlines()[0])
    sft_lines = (out / "sft" / f"{split0}.jsonl").read_bytes().splitlines()
    # (a build at tier content, the default, ends each record with its fidelity and alterations)
    want = [orjson.dumps(r.model_dump(mode="json")) for r in sft_records(conv, split0, tiers=True)]
    assert sft_lines[: len(want)] == want and len(want) == 3
    assert json.loads(want[0])["fidelity"] == "byte" and json.loads(want[0])["alterations"] == []
    dp_lines = (out / "decision_points" / f"{split0}.jsonl").read_bytes().splitlines()
    want_dp = [orjson.dumps(d.model_dump(mode="json")) for d in decision_points(conv, split0, tiers=True)]
    assert dp_lines[:3] == want_dp
    assert isinstance(json.loads(dp_lines[0])["next_turn"]["tool_calls"][0]["function"]["arguments"], dict)
    assert json.loads(dp_lines[0])["tool_results"][0]["role"] == "tool"
    # card and manifest
    card = (out / "README.md").read_text()
    assert "false-positive rate" in card and "Licence" in card and "unsupported_tool" in card
    listed = {o["path"] for o in m["outputs"]}
    assert {"ledger.jsonl", "README.md", "parquet/sft/train.parquet", "sft/validation.jsonl"} <= listed
    assert all(isinstance(o["sha256"], str) and len(o["sha256"]) == 64 for o in m["outputs"])
    assert m["inputs"][0]["path"].endswith("placeholder.txt") and m["config_sha256"]
    assert rep.seconds["export"] >= 0


def test_parquet_copies_load_with_datasets(tmp_path):
    from datasets import load_dataset

    out = tmp_path / "out"
    build_dataset(_cfg(tmp_path), tmp_path, out=out, items=_items())
    ds = load_dataset("parquet", data_files={"train": str(out / "parquet" / "sft" / "train.parquet")}, split="train")
    jl = [json.loads(x) for x in (out / "sft" / "train.jsonl").read_text().splitlines()]
    assert len(ds) == len(jl) > 0
    row = ds[0]
    from harnessfit.models.messages import to_template_messages

    # the same record in the shape a chat template takes: context as prompt, the action as completion, objects
    assert row["id"] == jl[0]["id"]
    assert row["prompt"] == to_template_messages(jl[0]["messages"])
    assert row["completion"] == to_template_messages([jl[0]["action"]])
    assert row["tools"] == jl[0]["tools"]


@pytest.mark.slow
def test_same_items_same_bytes_whatever_the_worker_count(tmp_path):
    a, b = tmp_path / "a" / "out", tmp_path / "b" / "out"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    build_dataset(_cfg(tmp_path), tmp_path, out=a, items=_items())
    build_dataset(_cfg(tmp_path, workers=2), tmp_path, out=b, items=_items())
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files_a == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_config_errors_are_one_line(tmp_path):
    bad = tmp_path / "b.toml"
    bad.write_text('inputs = ["x"]\n[split]\ntrain = 0.5\nvalidation = 0.1\ntest = 0.1\n')
    with pytest.raises(UserError, match="add up to 1"):
        load_build_config(bad)
    bad.write_text('inputs = ["x"]\nbogus = 1\n')
    with pytest.raises(UserError, match="bogus"):
        load_build_config(bad)
    r = CliRunner().invoke(app, ["build", "--inputs", str(tmp_path / "missing"), "--out", str(tmp_path / "o")])
    assert r.exit_code != 0 and "input not found" in str(r.exception) + r.output


def test_refuses_to_overwrite_a_foreign_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    with pytest.raises(UserError, match="not empty"):
        build_dataset(_cfg(tmp_path), tmp_path, out=out, items=_items())


def test_garbage_collector_freezing_is_undone_and_changes_no_byte(tmp_path, monkeypatch):
    """The build freezes its live objects out of full collections every _FREEZE_EVERY records and unfreezes them
    at the end (also when it fails); a process that uses gc.freeze itself is left alone."""
    import gc

    import harnessfit.dataset.build as build

    a, b = tmp_path / "a" / "out", tmp_path / "b" / "out"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    build_dataset(_cfg(tmp_path), tmp_path, out=a, items=_items())
    monkeypatch.setattr(build, "_FREEZE_EVERY", 2)
    frozen = []
    real_freeze = gc.freeze
    monkeypatch.setattr(build.gc, "freeze", lambda: (frozen.append(1), real_freeze()))
    build_dataset(_cfg(tmp_path), tmp_path, out=b, items=_items())
    assert len(frozen) == 7 and gc.get_freeze_count() == 0
    for rel in sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file()):
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel

    def broken():
        yield _items()[0]
        yield _items()[1]
        raise RuntimeError("reader bug")

    with pytest.raises(RuntimeError):
        build_dataset(_cfg(tmp_path), tmp_path, out=tmp_path / "c", items=broken())
    assert gc.get_freeze_count() == 0
    real_freeze()  # someone else's freeze: the build neither adds to it nor undoes it
    try:
        before = gc.get_freeze_count()
        frozen.clear()
        build_dataset(_cfg(tmp_path), tmp_path, out=tmp_path / "d", items=_items())
        assert frozen == [] and 0 < gc.get_freeze_count() <= before  # (frozen objects freed by refcount leave)
    finally:
        gc.unfreeze()


def test_sub_agent_runs_land_in_their_parents_split(tmp_path):
    """A sub-agent run (``subagent_of:<session>``) is in the split of the conversation that spawned it
    (``session:<session>``), though its root request (its own prompt) differs; a run whose parent is not in the
    corpus is its own group."""
    parents = corpus(16)
    for i, p in enumerate(parents):
        p.meta.transformations.append(f"session:codex:S{i}")
    kids = [
        make_conv(
            f"Sub-task {i}: look at m{i}.py",
            [("read", {"path": f"m{i}.py"}, f"x = {i}\n")],
            answer=f"m{i}.py sets x to {i}.",
            salt=f"kid{i}",
            source="codex",
        )
        for i in range(17)
    ]
    for i, k in enumerate(kids):
        k.meta.transformations.append(f"subagent_of:codex:S{i}")  # S16: no such parent
    out = tmp_path / "out"
    build_dataset(_cfg(tmp_path), tmp_path, out=out, items=[*parents, *kids])
    split_of = {}
    m = json.loads((out / "manifest.json").read_text())
    for split in m["splits"]["per_split"]:
        for line in (out / "conversations" / f"{split}.jsonl").read_text().splitlines():
            split_of[json.loads(line)["id"]] = split
    assert all(split_of[k.id] == split_of[p.id] for k, p in zip(kids[:16], parents, strict=True))  # kid 16: no parent
    assert kids[16].id in split_of and m["splits"]["group_overlap"] == 0
