"""Training refuses an audit it does not match, and every user mistake ends as one line (exit 2, no traceback)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from _helpers.tinyset import make_tiny_model
from harnessfit.errors import UserError
from harnessfit.train.sft import train_sft

BIN = Path(sys.executable).parent / "harnessfit"


def _copy_audit(tiny_audit: Path, tmp_path: Path) -> Path:
    out = tmp_path / "audit"
    shutil.copytree(tiny_audit, out)
    return out


def _edit_meta(audit: Path, **changes) -> None:
    path = audit / "tokenized" / "meta.json"
    meta = json.loads(path.read_text())
    meta.update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        meta.pop(key)
    path.write_text(json.dumps(meta))


def test_other_base_model_than_the_audit_is_refused(fast_recipe, tmp_path) -> None:
    other = make_tiny_model(tmp_path / "other-model", seed=1)
    with pytest.raises(UserError, match=r"is not the one the audit .* tokenized with .*set model: "):
        train_sft(fast_recipe(model=str(other)), tmp_path / "run")


def test_changed_template_is_refused(fast_recipe, tiny_audit, tmp_path) -> None:
    audit = _copy_audit(tiny_audit, tmp_path)
    (audit / "tokenizer" / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    with pytest.raises(UserError, match=r"chat template in .* differs from the one the audit recorded"):
        train_sft(fast_recipe(audit_dir=str(audit)), tmp_path / "run")


def test_meta_without_audit_keys_is_refused(fast_recipe, tiny_audit, tmp_path) -> None:
    audit = _copy_audit(tiny_audit, tmp_path)
    _edit_meta(audit, resolved=None)
    with pytest.raises(UserError, match=r"lacks 'resolved'.*re-run the audit"):
        train_sft(fast_recipe(audit_dir=str(audit)), tmp_path / "run")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=300)


def _one_line_error(proc: subprocess.CompletedProcess, needle: str) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and proc.stderr.rstrip().splitlines()[-1] == errors[0], proc.stderr
    assert needle in errors[0], errors[0]
    return errors[0]


def _recipe(tmp_path: Path, **fields) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump({"lora_r": 4, "lora_alpha": 8, "threads": 1, "max_steps": 1, **fields}))
    return path


@pytest.mark.slow  # a CLI subprocess imports the whole stack (~20 s on 2 busy cores)
def test_cli_unknown_scheduler_is_one_line(tiny_audit, tmp_path) -> None:
    proc = _run(
        "train",
        "sft",
        str(_recipe(tmp_path, audit_dir=str(tiny_audit), lr_scheduler_type="cosinus")),
        "--out",
        str(tmp_path / "run"),
    )
    line = _one_line_error(proc, "unknown learning-rate scheduler 'cosinus'")
    assert "cosine_with_restarts" in line and "Value error" not in line


@pytest.mark.slow  # a CLI subprocess imports the whole stack (~20 s on 2 busy cores)
def test_cli_unloadable_base_model_is_one_line(tiny_model, tiny_audit, tmp_path) -> None:
    broken = tmp_path / "broken-model"
    shutil.copytree(tiny_model, broken)
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    audit = _copy_audit(tiny_audit, tmp_path)
    _edit_meta(audit, model=str(broken), resolved=str(broken.resolve()))
    proc = _run("train", "sft", str(_recipe(tmp_path, audit_dir=str(audit))), "--out", str(tmp_path / "run"))
    _one_line_error(proc, f"cannot load a model from {broken.resolve()}")


def _adapter(tiny_model: Path, out: Path) -> Path:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny_model),
        LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"),
    )
    model.save_pretrained(out)
    (out / "harnessfit_adapter.json").write_text(
        json.dumps({"base_model": str(tiny_model), "base_model_path": str(tiny_model)})
    )
    return out


def _wider_model(folder: Path) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=64,
        hidden_size=48,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=True,
    )
    LlamaForCausalLM(cfg).save_pretrained(folder)
    return folder


@pytest.mark.slow  # a CLI subprocess imports the whole stack (~20 s on 2 busy cores)
def test_cli_merge_with_a_broken_adapter_is_one_line(tiny_model, tmp_path) -> None:
    adapter = _adapter(tiny_model, tmp_path / "adapter")
    (adapter / "adapter_model.safetensors").write_bytes(b"cut short")
    proc = _run("export", "merge", str(adapter), "--out", str(tmp_path / "merged"))
    _one_line_error(proc, f"the adapter pins base {tiny_model}")


@pytest.mark.slow
def test_cli_serve_adapter_on_another_base_is_one_line(tiny_model, tmp_path) -> None:
    from harnessfit.models import ensure_embedded

    adapter = _adapter(tiny_model, tmp_path / "adapter")
    wider = _wider_model(tmp_path / "wider")
    proc = _run(
        "serve",
        str(wider),
        "--adapter",
        str(adapter),
        "--tokenizer",
        str(ensure_embedded()),
        "--backend",
        "builtin",
        "--port",
        "0",
    )
    _one_line_error(proc, f"cannot apply adapter {adapter} to base model {wider}: the adapter pins base {tiny_model}")


def test_recipe_without_audit_dir_says_where_the_audit_writes(tmp_path) -> None:
    from harnessfit.train.config import load_sft_config

    cfg = load_sft_config(None)
    assert cfg.audit_dir is None  # no default that disagrees with the audit's DATASET-audit
    with pytest.raises(UserError, match=r"names no audit_dir.*DATASET-audit beside the dataset.*--audit-dir"):
        train_sft(cfg, tmp_path / "run")
