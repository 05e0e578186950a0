"""audit: report numbers, tokenized set, planted violations through the whole stage, bad input, reproducibility."""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from _helpers.sft import SYSTEM, call, conversation_records, record, write_dataset
from harnessfit.cli import app
from harnessfit.core.jsonio import read_jsonl as orjson_lines
from harnessfit.core.records import SFTRecord
from harnessfit.errors import UserError
from harnessfit.models import load_tokenizer, template_info
from harnessfit.tokens import audit, read_tokenized, render_record


def _dataset(root: Path) -> Path:
    train = conversation_records(4, group="g1") + conversation_records(3, group="g2")
    planted = [
        # double-encoded arguments (a JSON string holding the JSON object)
        record(
            "zz-double",
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}],
            {"role": "assistant", "content": None, "tool_calls": [call("c9", "read", '"{\\"path\\":\\"x\\"}"')]},
        ),
        # empty action
        record(
            "zz-empty",
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}],
            {"role": "assistant", "content": "", "tool_calls": []},
        ),
        # longer than every cap, including the model's native 8192
        record(
            "zz-long",
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "word " * 9000}],
            {"role": "assistant", "content": "ok"},
        ),
    ]
    test = conversation_records(2, split="test", group="g3")
    return write_dataset(
        root, {"train": train + planted, "test": test}, extra_lines={"train": [b'{"id": "broken", "messages": 3}']}
    )


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit")
    ds = _dataset(root / "ds")
    report = audit(ds, "embedded", root / "out", caps=[128, 4096], progress=False)
    return report, root / "out", ds


def test_report_counts_and_findings(audited) -> None:
    report, out, _ = audited
    assert report.records_read == 5 + 4 + 3 + 1 + 3
    assert report.problems["invalid_record"].count == 1 and report.problems["invalid_record"].ids == ["train.jsonl:13"]
    assert report.problems["empty_action"].ids == ["zz-empty"]
    assert report.problems["too_long"].ids == ["zz-long"]
    assert report.violations["double_encoded_arguments"].ids == ["zz-double"]
    for kind in ("prompt_in_loss", "missing_end_of_turn", "think_in_labels", "prefix_unstable"):
        assert report.violations[kind].count == 0
    assert report.records_rendered == 14 and report.records_clean == 13
    # the planted records share conversation g1 but none extends the one before it: each starts a new run
    assert report.breaks["history_rewritten"].ids == ["zz-empty", "zz-long"]
    assert report.breaks["render_rewritten"].count == report.breaks["token_seam"].count == 0
    assert report.runs == {"runs": 6, "by_definition": 0}
    assert report.template["name"] == "chatml-tools"
    assert report.native_context == 8192 and [c.cap for c in report.caps] == [128, 4096, 8192]
    assert report.caps[-1].native and report.caps[-1].records_dropped == 1  # only zz-long is over 8192
    t = report.total
    assert t.total_tokens == t.prompt_tokens + t.supervised_tokens
    assert sum(s.records for s in report.splits.values()) == t.records == 14
    assert report.lengths["min"] <= report.lengths["median"] <= report.lengths["p95"] <= report.lengths["max"]
    assert report.lengths["max"] > 9000
    # every short record fits in 4096, so that cap keeps ≥ 95% of supervised tokens and is recommended
    assert report.recommended_cap == 4096 and report.cap_applied == 4096
    assert report.excluded_over_cap == 1
    md = (out / "audit.md").read_text()
    assert "Recommended cap: 4096" in md and "double_encoded_arguments | 1 | zz-double" in md
    assert "## Chains" in md and "| train | 9 |" in md and "| history_rewritten | 2 | zz-empty, zz-long |" in md
    assert [orjson.loads(x)["id"] for x in (out / "breaks.jsonl").read_bytes().splitlines()] == ["zz-empty", "zz-long"]
    assert (out / "lengths.png").read_bytes()[:4] == b"\x89PNG"
    kinds = [orjson.loads(line)["kind"] for line in (out / "violations.jsonl").read_bytes().splitlines()]
    assert sorted(kinds) == ["double_encoded_arguments", "empty_action", "invalid_record", "too_long"]


def test_tokenized_set_is_what_was_audited(audited) -> None:
    report, out, ds = audited
    table = read_tokenized(out, "train")
    assert table.schema.field("input_ids").type.value_type.bit_width == 32
    assert table.schema.field("assistant_masks").type.value_type.bit_width == 8
    # one chain per conversation: g1's 5 actions, g2's 4; the planted records are kept out
    ids = table.column("id").to_pylist()
    assert ids == ["g1-000", "g2-000"]
    rows = table.to_pylist()
    assert [len(r["action_ids"]) for r in rows] == [5, 4]
    assert not {"zz-double", "zz-long", "zz-empty"} & {a for r in rows for a in r["action_ids"]}
    assert report.tokenized == {"test": 1, "train": 2}
    assert report.layouts["train"].actions == 9 and report.layouts["test"].actions == 3
    st = report.layouts_total
    assert (
        st.chain_tokens == sum(r["n_tokens"] for r in rows) + read_tokenized(out, "test").column("n_tokens")[0].as_py()
    )
    assert st.chain_tokens < st.record_tokens / 2 and st.chain_to_record_ratio == round(
        st.chain_tokens / st.record_tokens, 6
    )
    tok = load_tokenizer(str(out / "tokenizer"), template="native")
    meta = orjson.loads((out / "tokenized" / "meta.json").read_bytes())
    assert meta["format"] == "harnessfit-tokenized/2" and meta["layout"] == "chains"
    assert meta["chains"] == {"test": 1, "train": 2} and meta["actions"] == {"test": 3, "train": 9}
    assert meta["template_sha256"] == template_info(tok).sha256 == report.template["sha256"]
    assert meta["template"] == tok.chat_template and meta["cap_applied"] == 4096
    assert tok.convert_tokens_to_ids("<|im_end|>") in meta["stop_token_ids"]
    assert meta["revision"]  # the GGUF's sha256 for the embedded model
    # every action of a chain is exactly its own record: the first `length` tokens, supervised on its own span
    records = {r["id"]: SFTRecord(**r) for r in orjson_lines(ds / "sft" / "train.jsonl") if "action" in r}
    for row in rows:
        assert len(row["input_ids"]) == len(row["assistant_masks"]) == row["n_tokens"] == row["action_lengths"][-1]
        assert (
            sum(row["assistant_masks"])
            == row["n_supervised"]
            == sum(e - s for s, e in zip(row["action_starts"], row["action_ends"], strict=True))
        )
        for aid, s, e, n in zip(
            row["action_ids"], row["action_starts"], row["action_ends"], row["action_lengths"], strict=True
        ):
            alone = render_record(tok, records[aid])
            assert alone.input_ids == row["input_ids"][:n]
            assert alone.assistant_masks == [0] * s + [1] * (e - s) + [0] * (n - e)
            labels = tok.decode(row["input_ids"][s:e])
            assert labels.endswith("<|im_end|>") and "<|im_start|>" not in labels


def test_second_run_is_identical(audited, tmp_path: Path) -> None:
    _, out, ds = audited
    audit(ds, "embedded", tmp_path / "again", caps=[128, 4096], progress=False)
    for rel in (
        "audit.json",
        "audit.md",
        "violations.jsonl",
        "tokenized/meta.json",
        "tokenized/train.parquet",
        "tokenized/test.parquet",
        "manifest.json",
    ):
        assert (tmp_path / "again" / rel).read_bytes() == (out / rel).read_bytes(), rel


@pytest.mark.slow
def test_cli_audit_and_user_errors(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds", {"train": conversation_records(2)})
    runner = CliRunner()
    res = runner.invoke(app, ["audit", str(ds), "--model", "embedded", "--caps", "1024,2048"])
    assert res.exit_code == 0, res.output
    assert "mask violations: none" in res.output
    data = orjson.loads((tmp_path / "ds-audit" / "audit.json").read_bytes())
    assert data["recommended_cap"] == 1024 and data["records_clean"] == 3
    assert pq.read_table(tmp_path / "ds-audit" / "tokenized" / "train.parquet").num_rows == 1  # one chain of 3
    with pytest.raises(UserError, match="no SFT records"):
        audit(tmp_path, "embedded", tmp_path / "o", progress=False)
    with pytest.raises(UserError, match="--caps"):
        runner.invoke(app, ["audit", str(ds), "--caps", "big"], catch_exceptions=False)


def test_model_without_chat_template_is_a_clear_error(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1}, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]").save_pretrained(tmp_path / "plain")
    ds = write_dataset(tmp_path / "ds", {"train": conversation_records(1)})
    with pytest.raises(UserError, match="no chat template"):
        audit(ds, str(tmp_path / "plain"), tmp_path / "o", progress=False)
