"""Training on chains: the same objective as per-action records end to end, the data facts in the report, and a
split without trainable actions said plainly instead of stopping the run."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest

from harnessfit.errors import UserError
from harnessfit.train.sft import train_sft


def _recipe(audit, **kw):
    from harnessfit.train.config import load_sft_config

    base = dict(
        audit_dir=str(audit),
        lora_r=4,
        lora_alpha=8,
        lora_dropout=0.0,
        learning_rate=1e-2,
        gradient_accumulation_steps=1,
        eval_steps=1,
        save_steps=1,
        max_steps=1,
        threads=1,
        guard={"enabled": False},
    )
    return load_sft_config(None, **{**base, **kw})


def _losses(run):
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if "loss" in r], [r["eval_loss"] for r in rows if "eval_loss" in r]


def test_one_step_on_every_action_is_the_same_in_both_layouts(tiny_chains, tmp_path) -> None:
    """All training actions in one optimizer step: chains (6 rows) and records (one row per action) give the same
    per-action loss, the same gradient norm and the same held-out loss after the step."""
    runs = {}
    for layout, rows in (("chains", 6), ("records", 15)):
        res = train_sft(_recipe(tiny_chains, layout=layout, per_device_train_batch_size=rows), tmp_path / layout)
        assert res.status == "completed" and res.data["train_rows"] == rows and res.data["train_actions"] == 15
        assert res.data["every_action_seen"] and res.data["actions_seen"] == 15
        runs[layout] = (res, *_losses(tmp_path / layout))
    (rc, tc, ec), (rr, tr, er) = runs["chains"], runs["records"]
    assert rc.data["tokens_per_epoch"] < rr.data["tokens_per_epoch"]
    assert rc.data["supervised_tokens_per_epoch"] == rr.data["supervised_tokens_per_epoch"]
    assert tc[0]["loss"] == pytest.approx(tr[0]["loss"], rel=1e-5)
    assert tc[0]["grad_norm"] == pytest.approx(tr[0]["grad_norm"], rel=1e-4)
    assert ec == pytest.approx(er, rel=1e-4) and len(ec) == 2  # before and after the step
    report = (tmp_path / "chains" / "train_report.md").read_text()
    assert "| layout | chains (loss weighting per_action) |" in report
    assert "15 of 15 training actions were in a training batch at least once (every one)" in report
    assert "tokens per epoch" in report and "per second" in report


def test_a_held_out_split_without_trainable_actions_is_said_plainly(tiny_chains, tmp_path) -> None:
    audit = tmp_path / "audit"
    shutil.copytree(tiny_chains, audit)
    val = pq.read_table(audit / "tokenized" / "validation.parquet").to_pylist()
    for row in val:
        row["source"] = "elsewhere"
    schema = pq.read_schema(audit / "tokenized" / "validation.parquet")
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(val, schema=schema), audit / "tokenized" / "validation.parquet")
    shutil.copy(audit / "tokenized" / "train.parquet", audit / "tokenized" / "test.parquet")
    res = train_sft(_recipe(audit, sources=["synthetic"]), tmp_path / "on-test")
    assert res.data["eval_split"] == "test" and res.initial_val_loss is not None
    assert "split 'validation' has no trainable actions (" in res.data["eval_note"]
    assert (
        "source_not_selected" in res.data["eval_note"] and "evaluating on split 'test' instead" in res.data["eval_note"]
    )
    (audit / "tokenized" / "test.parquet").unlink()
    res = train_sft(_recipe(audit, sources=["synthetic"]), tmp_path / "none")
    assert res.status == "completed" and res.data["eval_split"] is None and res.initial_val_loss is None
    assert res.data["eval_note"].endswith("training without a held-out loss")
    assert "training without a held-out loss" in res.report_path.read_text()
    skipped = [json.loads(x) for x in (tmp_path / "none" / "skipped.jsonl").read_text().splitlines()]
    assert res.data["train_skipped_by_reason"] == {}
    assert {s["reason"] for s in skipped} == {"source_not_selected"} and len(skipped) == sum(
        len(r["action_ids"]) for r in val
    )


def test_a_train_split_without_trainable_actions_is_one_clear_error(tiny_chains, tmp_path) -> None:
    with pytest.raises(
        UserError,
        match=r"nothing to train on .*split 'train' has no trainable actions "
        r"\(15 skipped: 15 source_not_selected\).*widen sources",
    ):
        train_sft(_recipe(tiny_chains, sources=["pi"]), tmp_path / "run")
