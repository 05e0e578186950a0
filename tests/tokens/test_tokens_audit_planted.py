"""Each mask violation kind planted through the whole audit stage (``audit(..., template=FILE.jinja)``): caught,
counted with record ids, explained, listed in violations.jsonl, and kept out of the tokenized set."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from _helpers.sft import conversation_records, write_dataset
from harnessfit.models.templates import chatml_tools_template
from harnessfit.tokens import audit, read_tokenized


def _prompt_in_loss(t: str) -> str:  # no generation prompt: the assistant header lands in the supervised diff
    return t.replace("{{- '<|im_start|>assistant\\n' }}", "{{- '' }}")


def _missing_end_of_turn(t: str) -> str:  # assistant turns closed by a newline, never <|im_end|>
    return t.replace(
        "{{- '<|im_end|>\\n' }}\n        {%- endif %}\n        {%- endgeneration %}",
        "{{- '\\n' }}\n        {%- endif %}\n        {%- endgeneration %}",
    )


def _think_in_labels(t: str) -> str:  # a thought written into every assistant turn
    return t.replace("{%- generation %}", "{%- generation %}{{- '\\n<think>\\nplan first\\n</think>' }}")


@pytest.mark.parametrize(
    "kind, plant",
    [
        ("prompt_in_loss", _prompt_in_loss),
        ("missing_end_of_turn", _missing_end_of_turn),
        ("think_in_labels", _think_in_labels),
    ],
)
@pytest.mark.slow
def test_planted_violation_caught_by_audit(tmp_path: Path, kind: str, plant) -> None:
    text = plant(chatml_tools_template())
    assert text != chatml_tools_template()
    template = tmp_path / f"{kind}.jinja"
    template.write_text(text, encoding="utf-8")
    records = conversation_records(2, group="g1")[:-1]  # the tool-call actions (the planted edits all reach them)
    ds = write_dataset(tmp_path / "ds", {"train": records})
    out = tmp_path / "audit"
    report = audit(ds, "embedded", out, template=str(template), progress=False)
    all_ids = sorted(r["id"] for r in records)
    assert report.template["name"] == f"file:{kind}.jinja"
    assert report.records_rendered == len(records)
    assert report.violations[kind].count == len(records) and report.violations[kind].ids == all_ids
    assert kind in report.explained and report.records_clean == 0
    listed = {
        orjson.loads(line)["id"]
        for line in (out / "violations.jsonl").read_bytes().splitlines()
        if orjson.loads(line)["kind"] == kind
    }
    assert listed == set(all_ids)
    assert report.tokenized == {"train": 0} and read_tokenized(out, "train").num_rows == 0
    assert f"| {kind} | {len(records)} |" in (out / "audit.md").read_text()
    # the same data with the unplanted template is clean
    clean = audit(ds, "embedded", tmp_path / "clean", progress=False)
    assert clean.violations[kind].count == 0 and clean.records_clean == len(records)
