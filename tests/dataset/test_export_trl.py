"""The Parquet export goes into TRL as it is: ``load_dataset("parquet", …)`` → ``SFTTrainer``, with every tool call
rendered by the chat template as the object the model wrote (never double-encoded, never padded with other tools'
keys as nulls)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from harnessfit.dataset.build import build_dataset
from harnessfit.dataset.config import config_from_values

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"
_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("trl-export")
    build_dataset(config_from_values(inputs=[str(TRACES)]), root, out=root / "ds")
    return root / "ds"


def _wire_arguments(jl_row: dict) -> list[dict]:
    return [json.loads(c["function"]["arguments"]) for c in jl_row["action"].get("tool_calls") or []]


@pytest.mark.slow  # loads the embedded tokenizer and model, and trains one step
def test_the_parquet_export_trains_in_trl_with_arguments_as_written(export: Path, tmp_path: Path) -> None:
    from datasets import load_dataset
    from trl import SFTConfig, SFTTrainer

    from harnessfit.models import load_model, load_tokenizer

    ds = load_dataset("parquet", data_files=str(export / "parquet" / "sft" / "train.parquet"), split="train")
    wire = {r["id"]: r for r in map(json.loads, (export / "sft" / "train.jsonl").read_text().splitlines())}
    assert len(ds) == len(wire) > 0
    tok = load_tokenizer("embedded")
    with_calls, lengths = [], {}
    for i, row in enumerate(ds):
        text = tok.apply_chat_template(row["prompt"] + row["completion"], tools=row["tools"], tokenize=False)
        rendered = [json.loads(block) for block in _CALL.findall(text.split("<|im_start|>assistant")[-1])]
        expected = _wire_arguments(wire[row["id"]])
        assert [r["arguments"] for r in rendered] == expected, row["id"]  # objects, exactly the recorded keys
        assert all(isinstance(r["arguments"], dict) for r in rendered)  # never a JSON string holding the object
        if expected:
            with_calls.append(i)
            lengths[i] = len(tok(text)["input_ids"])
    assert len(with_calls) >= 2
    shortest = sorted(with_calls, key=lengths.__getitem__)[:2]
    args = SFTConfig(
        output_dir=str(tmp_path / "run"),
        max_steps=1,
        per_device_train_batch_size=1,
        max_length=None,
        use_cpu=True,
        bf16=False,
        report_to="none",
        save_strategy="no",
        seed=0,
    )
    trainer = SFTTrainer(
        model=load_model("embedded"), args=args, train_dataset=ds.select(shortest), processing_class=tok
    )
    first = trainer.train_dataset[0]
    supervised = sum(1 for x in first["labels"] if x != -100)
    assert 0 < supervised < len(first["input_ids"])  # prompt-completion: the loss covers the action only
    out = trainer.train()
    assert math.isfinite(out.training_loss) and trainer.state.global_step == 1


@pytest.mark.slow
def test_the_dataset_cards_trl_recipe_runs_as_written(export: Path, tmp_path: Path, monkeypatch) -> None:
    """The card's code block, run in the dataset folder with the embedded model; the test only shortens it (two rows,
    one step, nothing saved) through the same calls — precision and device are the recipe's own."""
    import datasets
    import trl

    from harnessfit.models import load_model, load_tokenizer

    card = (export / "README.md").read_text(encoding="utf-8")
    code = card.split("## Training with TRL", 1)[1].split("```python", 1)[1].split("```", 1)[0]

    def load_two(*a, **k):
        return datasets.load_dataset(*a, **k).select(range(2))

    def one_step(**k):
        return trl.SFTConfig(
            **{**k, "output_dir": str(tmp_path / "out"), "max_steps": 1, "report_to": "none", "save_strategy": "no"}
        )

    monkeypatch.chdir(export)
    scope = {"MODEL": load_model("embedded"), "TOKENIZER": load_tokenizer("embedded")}
    code = code.replace("from datasets import load_dataset", "").replace("from trl import SFTConfig, SFTTrainer", "")
    assert "bf16=torch.cuda.is_available()" in code
    names = {**scope, "load_dataset": load_two, "SFTConfig": one_step, "SFTTrainer": trl.SFTTrainer}
    exec(compile(code, "dataset-card-recipe", "exec"), names)  # the card's own code, as a user runs it
    assert names["trainer"].state.global_step == 1 and len(names["train"]) == 2
