"""The run's funnel: from the tool calls read to the actions trained, every count read from what the stages wrote,
and each step no larger than the one before it in the same unit."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessfit.pipeline.funnel import FEW_ACTIONS, read_funnel

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


@pytest.mark.slow
def test_funnel_adds_up_from_calls_read_to_actions_trained(tmp_path: Path, capfd) -> None:
    from harnessfit.dataset.build import build_dataset
    from harnessfit.dataset.config import config_from_values
    from harnessfit.tokens import audit
    from harnessfit.train import train_sft
    from harnessfit.train.config import load_sft_config

    if not TRACES.is_dir():
        pytest.fail(f"the shared traces are missing: {TRACES}")
    ds, au, tr = tmp_path / "ds", tmp_path / "audit", tmp_path / "train"
    build_dataset(config_from_values(inputs=[str(TRACES)], parquet=False), tmp_path, out=ds)
    audit(ds, "embedded", au, progress=False)
    cfg = load_sft_config(
        None,
        audit_dir=str(au),
        model="embedded",
        max_steps=1,
        max_train_records=3,
        max_record_length=3000,
        eval_strategy="no",
        eval_on_start=False,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        gradient_accumulation_steps=1,
        threads=2,
    )
    train_sft(cfg, tr)
    funnel = read_funnel(dataset=ds, audit=au, train=tr)
    n = {s.what: s.count for s in funnel.steps}
    units = {s.what: s.unit for s in funnel.steps}
    chain = [
        "actions to learn, all splits",
        "actions to learn, train split",
        "actions rendered, train split",
        "actions within the cap, train split",
        "actions selected for training",
        "actions trained (seen at least once)",
    ]
    assert n["tool calls read"] >= n["tool calls that are labels"] > 0
    assert all(units[w] == "actions" for w in chain)
    assert [n[w] for w in chain] == sorted((n[w] for w in chain), reverse=True), n
    assert n["actions rendered, train split"] == n["actions to learn, train split"]  # the audit renders every record
    assert n["actions selected for training"] == 3  # max_train_records
    assert funnel.warnings and f"fewer than {FEW_ACTIONS}" in funnel.warnings[0]
    assert "warning:" in capfd.readouterr().err  # and the run said so when it ended
