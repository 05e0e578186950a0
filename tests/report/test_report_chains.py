"""The HTML report shows the audit's two layouts (tokens as per-action records and as chains, chain breaks) from a
real audit with the embedded tokenizer, and a training run's data facts (layout, tokens per epoch, actions seen)
from its result.json. Model output and trace text in these tables is escaped like everywhere else."""

from __future__ import annotations

import html
import re
from pathlib import Path

import orjson
import pytest

from _helpers.sft import SYSTEM, conversation_records, record, write_dataset
from harnessfit.report.build import build_report
from harnessfit.tokens import audit

MARKUP = "<script>window.__pwned=1</script>"


def _cells(page: str, heading: str) -> list[list[str]]:
    """The rows of the first table that holds or follows ``heading``, as lists of cell texts (tags stripped,
    entities decoded)."""
    at = page.index(heading)
    table = (
        page[page.rindex("<table>", 0, at) :]
        if page.rfind("</table>", 0, at) < page.rfind("<table>", 0, at)
        else page[page.index("<table>", at) :]
    )
    table = table.split("</table>", 1)[0]
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, flags=re.S)
        ]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, flags=re.S)
    ]


@pytest.mark.slow  # loads the embedded tokenizer and audits
def test_audit_and_training_sections_show_both_layouts_and_what_training_saw(tmp_path: Path) -> None:
    train = (
        conversation_records(4, group="g1")
        + [
            # follows conversation g1 but does not extend it: a history_rewritten break, starting a chain of its own
            record(
                "zz-alone",
                [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}],
                {"role": "assistant", "content": "ok"},
            )
        ]
        + conversation_records(3, group="g2")
    )
    ds = write_dataset(tmp_path / "ds", {"train": train, "test": conversation_records(2, split="test", group="g3")})
    run = tmp_path / "run"
    rep = audit(ds, "embedded", run / "audit", caps=[4096], progress=False)
    assert rep.layouts_total.chains == 4 and rep.breaks["history_rewritten"].ids == ["zz-alone"]

    data = {
        "layout": "chains",
        "loss_weighting": "per_action",
        "train_split": "train",
        "train_rows": 3,
        "train_actions": 10,
        "tokens_per_epoch": 4321,
        "supervised_tokens_per_epoch": 210,
        "train_skipped": 2,
        "train_skipped_by_reason": {"over_max_length": 1, "source_not_selected": 1},
        "eval_split": None,
        "eval_actions": 0,
        "eval_note": f"split 'validation' {MARKUP}: no held-out loss",
        "rows_seen": 3,
        "actions_seen": 10,
        "every_action_seen": True,
        "supervised_tokens_seen": 210,
        "train_seconds": 12.5,
        "supervised_tokens_per_second": 16.8,
    }
    (run / "train").mkdir()
    (run / "train" / "result.json").write_bytes(orjson.dumps({"status": "completed", "global_step": 3, "data": data}))
    res = build_report(run)
    assert res.sections == ["funnel", "audit", "train"] and not res.skipped  # the funnel lines up what both wrote
    page = res.index.read_text()
    funnel = dict((r[1], r[2]) for r in _cells(page, "Each count is what that stage wrote")[1:])
    assert funnel["actions selected for training"] == "10" and funnel["actions trained (seen at least once)"] == "10"

    a = orjson.loads((run / "audit" / "audit.json").read_bytes())
    rows = _cells(page, "Layouts: per-action records vs chains")
    assert rows[0] == [
        "split",
        "actions",
        "supervised tokens",
        "tokens as records",
        "chains",
        "tokens as chains",
        "chains / records",
    ]
    for name, st in a["layouts"].items():
        assert [
            name,
            f"{st['actions']:,}",
            f"{st['supervised_tokens']:,}",
            f"{st['record_tokens']:,}",
            f"{st['chains']:,}",
            f"{st['chain_tokens']:,}",
            f"{st['chain_to_record_ratio']:.4f}",
        ] in rows
    lt = a["layouts_total"]
    assert rows[-1] == [
        "total",
        f"{lt['actions']:,}",
        f"{lt['supervised_tokens']:,}",
        f"{lt['record_tokens']:,}",
        f"{lt['chains']:,}",
        f"{lt['chain_tokens']:,}",
        f"{lt['chain_to_record_ratio']:.4f}",
    ]
    assert lt["chain_tokens"] < lt["record_tokens"]
    breaks = _cells(page, "chain break")
    assert ["history_rewritten", "1", "zz-alone"] in breaks and ["token_seam", "0", ""] in breaks
    assert (res.index.parent / "files" / "audit" / "breaks.jsonl").is_file()
    assert f"chains take {lt['chain_to_record_ratio']:.1%} of the per-action records" in page  # the summary line

    saw = dict((r[0], r[1]) for r in _cells(page, "What training saw"))
    assert saw["layout"] == "chains (loss weighting per_action)"
    assert saw["tokens per epoch"] == "4,321 (210 supervised)"
    assert saw["training set"] == (
        "split train: 10 actions in 3 chains; 2 action(s) skipped (1 over_max_length, 1 source_not_selected)"
    )
    assert saw["actions seen"] == "10 of 10 training actions were in a training batch at least once (every one)"
    assert saw["supervised tokens seen"] == "210 in 12.5 s (16.8 per second)"
    assert MARKUP not in page and html.escape(MARKUP, quote=False) in page
    assert "10 of 10 training actions seen (chains)" in page


def test_training_section_without_data_facts_has_no_such_table(tmp_path: Path) -> None:
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "result.json").write_bytes(orjson.dumps({"status": "completed", "global_step": 1}))
    page = build_report(tmp_path).index.read_text()
    assert "What training saw" not in page and "completed, 0 optimizer steps" in page
