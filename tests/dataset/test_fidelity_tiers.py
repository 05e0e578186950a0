"""Fidelity tiers on both shared trace sets: a build at tier ``byte`` writes exactly what builds wrote before tiers
existed (every output's SHA-256 pinned from main's code before the change, commit cf571f5); a build at tier
``content`` (the default) marks every SFT record and decision point with its tier and the alterations of its
context, counts the labels per tier, and ``verify`` rebuilds both byte for byte.

The pinned digests are of a copy of each set (``in/<name>`` beside the output ``ds``, so the manifest's relative
input path is the same anywhere) built with ``install_dir = /opt/pi`` at the default target. A change that alters the
output at tier byte on purpose (a new format rule, another package version in the manifest) must re-pin them, saying
why."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson
import pytest

from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values
from harnessfit.dataset.verify import verify_dataset

BEFORE_TIERS = {  # sha256 of every output, built by commit cf571f5 (main before tiers, after the sub-agent and
    # optional-tool mapping landed: they changed the ledger and manifest on purpose), same layout and config;
    # yield.json and manifest.json re-pinned when Pi sessions were dated by their own words (``texts_fit`` in the
    # yield's ``pi_recorded``), every other file as cf571f5 wrote it
    "traces": {
        "README.md": "c19c1ade45c6f839ddc637a0cc2457ab7a6f9d2e9feec4b0ee0f38b8471af33c",
        "conversations/test.jsonl": "84877a9c06d064a66b1b5c7af42454ae8eafc3a5b4c03ccba35bac8175b02368",
        "conversations/train.jsonl": "6b97cbdb4cae8af6bf3b42b6821e9c4e08ad015a15d17e1a53e1eefd43d02abc",
        "conversations/validation.jsonl": "90290fa03834fd54e2064bc01082730882e4c29269e218f808609657eb3a6a7d",
        "decision_points/test.jsonl": "1bcae977b927c584c77d2b3a0bd7d1fa7ebc9c5719ef117c1ca3a1be7869586c",
        "decision_points/train.jsonl": "5ae1e2da95a3f3468f6cbc95ecd065c4872691b14dd345deb247407f9b4def34",
        "decision_points/validation.jsonl": "8c445cf55600604c59bf367cb0d577234636bde0a7713d2397f1b5e692c5dfc2",
        "ledger.jsonl": "646cc741274d9e2ce17b14e9b02cb2a3a5adcc1e7c859c4ad59eabd40f11ca35",
        "ledger_summary.json": "2d6009689a7433b34d7a536f54254bd8721b7174e6c94db74bedbf555951d5e1",
        "manifest.json": "ebceedc34780e1c884d83115d74183f2941c1faad3698f3473791ac45fe2aa00",
        "parquet/conversations/test.parquet": "a91322f28da4e7bda0e4aba980221aca71fe3c8d2f748a4465b7991209006385",
        "parquet/conversations/train.parquet": "bbcb07e40188671dc6b0fde16cf8a8093690a9b17da38150226a7fa3989dc4c4",
        "parquet/conversations/validation.parquet": "2a2ba15d6001fdf67b02c886c4c0b19abca90d66c580af226447736f352830be",
        "parquet/decision_points/test.parquet": "6354d104fce8edcda16e72842a1efb486964a7bc01574ad0a6f0d46f2012e1d8",
        "parquet/decision_points/train.parquet": "5159ef9bb212ac515a49c63a43a9f7cc68681a2e271124e9072ab4b702549a47",
        "parquet/decision_points/validation.parquet": "3755394d40ff380cd20edf90552d08414d1590c916237ee07ef317d7bc58494a",
        "parquet/sft/test.parquet": "f2574fc8fec113835ffd1aa4b8f32badf61277e6feb8ed6b7fdc31464320c716",
        "parquet/sft/train.parquet": "6732f3dfb7315bd6ca0538ff67b675a287bf76dcd3124fd410c7bc433b6a9775",
        "parquet/sft/validation.parquet": "7178f9d635450d3f609b5fef258a7224ffbd795d869fcc447c76426c0ea1e8f2",
        "sft/test.jsonl": "03ff81a8b1b9e25accfec5a5d7fbf05f79ff88da55a6a1740d9616213dfe8363",
        "sft/train.jsonl": "5729f19a746faad4eb0195e389beb63a2a6e4585f1f291cbf8f2306804442ded",
        "sft/validation.jsonl": "91abdcff3cf0443eacf75c9ffe58dd7a70830a239052d7de0c1c947574c8d133",
        "yield.json": "04d1d74d4dbe0c6be01bbe2a95c1dfe657bcd7c57dccc979a09bf3f78c8091e4",
        "yield.md": "3a8a9ea8ea7b48176f59a066374b3a297a13d8c66c74f2f72cea7024cd0c8bd4",
    },
    "traces-extra": {
        "README.md": "f78c8b577d98ccfb8ed01fb63efdc0fa3a9d281d5929baac42e29d8632600f86",
        "conversations/test.jsonl": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "conversations/train.jsonl": "1a92cb8ddbdf565d29c301951f316fe618c5def0c553e517a1330e24d0de3e4d",
        "conversations/validation.jsonl": "8df2f349f00d2c59edbd742b5986d8434880b97065b0064861ed4786b7b7c69b",
        "decision_points/test.jsonl": "d6fbf072310bbb9df5011888dd472e9bb11167f2f0bb8eb0ba0a0d2f6230d316",
        "decision_points/train.jsonl": "614b74abb7bf0d88083439ea237b490744b183ee8b1a5b2d637da295297a94ef",
        "decision_points/validation.jsonl": "e874297bfa73149285fca83c888ba2c53775fe59b0a0bc185ef4037c3b93a4e4",
        "ledger.jsonl": "5ae38d8cae66043d0a988aa941f785286aba894a958f72ef0c4d33a47553fd2f",
        "ledger_summary.json": "4a43e5da10f99c16ca23968c767e1f06e7f8ae2f899a1ef20e51316b30a24193",
        "manifest.json": "afb964feb9c5b592349b0a77f343e43b3b1cb80806aa1af90f766d69beb395e8",
        "parquet/conversations/test.parquet": "732a9afcfb4a710dcfc7d28a416d51f14e0571e4b719d7625e8219bead824fa1",
        "parquet/conversations/train.parquet": "f3ce6f1d21122b2209ed23eed79aac1997e74912bcbce66320b9528e99cb4944",
        "parquet/conversations/validation.parquet": "000cfb21bec978850f92d5589a07155e808f8df39d22d0a9b103b5ca7619d9f9",
        "parquet/decision_points/test.parquet": "4a9d98fb6088e6de78f49c6cf28a42e0da09be103c1cd69cf033922f6144163d",
        "parquet/decision_points/train.parquet": "600b9a8f3503e4e2c825164f948f72e0c55f088af0786f0a766b2935c106b311",
        "parquet/decision_points/validation.parquet": "c268105cd68e33a9c2df8654b786047c18f655abdc1ee3da8a10104101c1181e",
        "parquet/sft/test.parquet": "55d0416563322614447066ac5bf88f6b452cd079cd2e7f62a4f2e6e5cdb0afc0",
        "parquet/sft/train.parquet": "77d7b8bdd5f1189858fcf7f6ee1c5d6f317f0a20d1831d2f6983ccbfd247f2bd",
        "parquet/sft/validation.parquet": "efb53df7e4dff3070bed70b83e2f6eb4004d7b9a16496d3a32453d793ca458ac",
        "sft/test.jsonl": "6e86e7416d60df014340edbc83da7432589a654039cb7830aa1c82741693fa1e",
        "sft/train.jsonl": "bc4d2c3910ff66560cf74daa14cad468b5f4fecdbe1b8b67134fca19a97521e9",
        "sft/validation.jsonl": "79852642719c290ce21ac961c81a8b8c3213adbd22b502885ff9ac508d698048",
        "yield.json": "c768ff64cbf9032bccb96ea7f2dae7839d94e909aa68c0112b18ca7c51d1da72",
        "yield.md": "da6e475bb1bb5623fa44ea11236c80892d79585c796a8efb4a449287a5c93cad",
    },
}


def _build(traces_dir: Path, tmp: Path, name: str, **values: object) -> Path:
    src = tmp / "in" / name
    shutil.copytree(traces_dir.parent / name, src)
    build_dataset(config_from_values(inputs=[str(src)], install_dir="/opt/pi", **values), tmp, out=tmp / "ds")
    return tmp / "ds"


def _digests(ds: Path) -> dict[str, str]:
    return {
        str(p.relative_to(ds)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(ds.rglob("*")) if p.is_file()
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", ["traces", "traces-extra"])
def test_tier_byte_writes_what_builds_wrote_before_tiers(traces_dir: Path, tmp_path: Path, name: str) -> None:
    ds = _build(traces_dir, tmp_path, name, fidelity="byte")
    assert _digests(ds) == BEFORE_TIERS[name]
    assert verify_dataset(ds).ok  # a manifest without fidelity is rebuilt at byte


def _records(ds: Path, kind: str) -> list[dict]:
    return [orjson.loads(line) for p in sorted((ds / kind).glob("*.jsonl")) for line in p.read_bytes().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["traces", "traces-extra"])
def test_tier_content_marks_every_record_and_counts_labels_per_tier(
    traces_dir: Path, tmp_path: Path, name: str
) -> None:
    ds = _build(traces_dir, tmp_path, name)
    manifest = orjson.loads((ds / "manifest.json").read_bytes())
    assert manifest["config"]["fidelity"] == "content"
    convs = {c["id"]: c for c in _records(ds, "conversations")}
    sft = _records(ds, "sft")
    assert {r["fidelity"] for r in sft} == {"byte", "content"}
    checked = 0
    for r in sft:
        conv = convs.get(r["conversation_id"])  # a prefix's conversation is not exported: its records say it alone
        if conv is None:
            continue
        # the alterations of the conversation's altered tool messages inside the record's context, and only those
        names = sorted(
            {
                a
                for x in conv["meta"].get("altered") or []
                if x["message"] < len(r["messages"])
                for a in x["alterations"]
            }
        )
        assert r["alterations"] == names and (r["fidelity"] == "content") == bool(names), r["id"]
        assert all(
            r["messages"][x["message"]]["role"] == "tool"
            for x in conv["meta"].get("altered") or []
            if x["message"] < len(r["messages"])
        )
        checked += r["fidelity"] == "content"
    assert checked > 0 or name == "traces-extra"  # there every content record is an exact prefix's
    for kind in ("sft", "decision_points"):
        assert all(set(r) >= {"fidelity", "alterations"} for r in _records(ds, kind))
    total = orjson.loads((ds / "yield.json").read_bytes())["total"]
    assert total["labels_by_fidelity"]["byte"] + total["labels_by_fidelity"]["content"] == total["labels"]
    assert total["labels_by_fidelity"]["content"] > 0
    per_split = manifest["splits"]["per_split"].values()
    assert sum(s["sft_content"] for s in per_split) == sum(r["fidelity"] == "content" for r in sft)
    card = (ds / "README.md").read_text()
    assert "### Labels per fidelity tier" in card
    assert "## Labels per fidelity tier" in (ds / "yield.md").read_text()
    assert verify_dataset(ds).ok
