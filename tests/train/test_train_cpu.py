"""Real training runs on a tiny random Llama (CPU, fp32): loss goes down, outputs written, guard stops gracefully,
the stopped checkpoint resumes, and the adapter merges."""

import json

import pytest
import torch

from harnessfit.train.guard import ScriptedReadings
from harnessfit.train.sft import train_sft

OK = dict(host_mem_avail_gib=20.0, swap_used_gib=0.0, disk_free_gib=100.0)


@pytest.mark.slow
def test_training_reduces_val_loss_and_writes_outputs(fast_recipe, tmp_path):
    res = train_sft(fast_recipe(num_train_epochs=2), tmp_path / "run")
    assert res.status == "completed" and res.global_step == 16
    assert res.final_val_loss < res.initial_val_loss - 0.2
    assert res.best_val_loss <= res.final_val_loss
    adapter = res.adapter_dir
    assert (adapter / "adapter_model.safetensors").is_file()
    meta = json.loads((adapter / "harnessfit_adapter.json").read_text())
    assert meta["base_model_revision"].startswith("sha256:") and meta["train_records"] == 32
    report = res.report_path.read_text()
    assert "validation loss before training" in report and "Resource envelope" in report
    assert "| host memory available |" in report  # guard samples made it into the envelope table
    for png in ("val_loss.png", "token_accuracy.png", "learning_rate.png"):
        assert (tmp_path / "run" / "plots" / png).stat().st_size > 1000
    assert any((tmp_path / "run" / "tensorboard").iterdir())
    steps = [json.loads(x)["step"] for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert steps == sorted(steps)

    # merge: the merged model gives the same logits as base + adapter
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from harnessfit.train.merge import merge_adapter

    merged_dir = merge_adapter(adapter, tmp_path / "merged")
    ids = torch.tensor([[3, 4, 5, 6, 7, 8]])
    with torch.no_grad():
        merged = AutoModelForCausalLM.from_pretrained(merged_dir).eval()(ids).logits
        base = AutoModelForCausalLM.from_pretrained(meta["base_model_path"])
        ref = PeftModel.from_pretrained(base, str(adapter)).eval()(ids).logits
    assert torch.allclose(merged, ref, atol=1e-4)
    assert (merged_dir / "generation_config.json").is_file() and (merged_dir / "tokenizer.json").is_file()


@pytest.mark.slow
def test_guard_stop_leaves_a_usable_checkpoint(fast_recipe, tmp_path):
    # host memory reads low from the third sample on: the guard fires while training runs
    src = ScriptedReadings([OK, OK, {**OK, "host_mem_avail_gib": 0.05}])
    common = dict(num_train_epochs=30, save_steps=100, eval_steps=100)
    res = train_sft(fast_recipe(**common), tmp_path / "run", reading_source=src)
    assert res.status == "stopped" and "host memory" in res.stop_reason
    assert 0 < res.global_step < 240
    assert res.checkpoint_dir.name == f"checkpoint-{res.global_step}"  # saved at the stop step, not a scheduled one
    assert json.loads((tmp_path / "run" / "stop_reason.json").read_text())["rule"] == "host_mem"
    assert "Stopped by the health guard" in res.report_path.read_text()
    assert res.adapter_dir is None
    # the checkpoint is usable: resume with healthy readings and finish
    done = train_sft(
        fast_recipe(**common, max_steps=res.global_step + 3),
        tmp_path / "run",
        resume=True,
        reading_source=ScriptedReadings([OK]),
    )
    assert done.status == "completed" and done.resumed_from == res.checkpoint_dir
    assert done.global_step == res.global_step + 3


def test_existing_checkpoints_need_resume(fast_recipe, tmp_path):
    from harnessfit.errors import UserError

    (tmp_path / "run" / "checkpoints" / "checkpoint-4").mkdir(parents=True)
    (tmp_path / "run" / "checkpoints" / "checkpoint-4" / "trainer_state.json").write_text("{}")
    with pytest.raises(UserError, match="--resume"):
        train_sft(fast_recipe(), tmp_path / "run")
