"""The configs extend TRL's: published defaults declared once, YAML + flags through TRL's parser, --help from the
field metadata, cross-field checks with cause and fix, unknown keys as one line."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
from trl import GRPOConfig, SFTConfig

from harnessfit.errors import UserError
from harnessfit.train.config import (
    HarnessfitGRPOConfig,
    HarnessfitSFTConfig,
    config_help,
    load_grpo_config,
    load_sft_config,
)

REPO = Path(__file__).resolve().parents[2]


def test_sft_defaults_are_the_published_recipe() -> None:
    c = load_sft_config(None)
    assert isinstance(c, SFTConfig)
    assert (c.lora_r, c.lora_alpha, c.lora_dropout, c.lora_target_modules) == (32, 64, 0.05, "all-linear")
    assert (c.per_device_train_batch_size, c.gradient_accumulation_steps, c.learning_rate) == (1, 8, 1e-4)
    assert (c.num_train_epochs, c.seed, c.eval_steps, c.save_steps, c.eval_on_start) == (1.0, 42, 50, 50, True)
    assert c.lr_scheduler_type == "linear" and c.quantization == "auto" and c.completion_only_loss
    assert c.padding_free and c.max_length is None and c.max_record_length is None
    assert c.metric_for_best_model == "eval_loss"
    g = c.guard_rules
    assert (g.gpu_temp_c, g.gpu_temp_readings, g.min_host_mem_gib, g.min_free_disk_gib, g.interval_s) == (
        84,
        2,
        4,
        20,
        30,
    )
    assert c.bf16 is False and c.checkpointing_auto  # auto on this CPU machine: fp32; checkpointing decided later


def test_grpo_defaults_are_the_published_recipe() -> None:
    c = load_grpo_config(None)
    assert isinstance(c, GRPOConfig)
    assert (c.num_generations, c.beta, c.loss_type, c.scale_rewards, c.temperature) == (8, 0.01, "dapo", "group", 1.0)
    assert (c.max_completion_length, c.mask_truncated_completions) == (640, True)
    assert (c.learning_rate, c.lr_scheduler_type, c.lr_scheduler_kwargs) == (
        4e-6,
        "cosine_with_min_lr",
        {"min_lr_rate": 0.4},
    )
    assert (c.warmup_steps, c.max_grad_norm, c.weight_decay, c.num_train_epochs) == (46, 0.5, 0.01, 2.0)
    assert (c.lora_r, c.lora_alpha, c.lora_dropout) == (64, 128, 0.1)
    assert c.lora_target_modules == ["q_proj", "k_proj", "v_proj", "o_proj"]
    assert c.use_vllm is False  # no vLLM / CUDA here: transformers generation
    hybrid = load_grpo_config(None, lora_extra_target_modules=["in_proj", "shared_experts.up_proj"])
    assert hybrid.lora_targets() == ["q_proj", "k_proj", "v_proj", "o_proj", "in_proj", "shared_experts.up_proj"]


@pytest.mark.parametrize("cls", [HarnessfitSFTConfig, HarnessfitGRPOConfig])
def test_every_harnessfit_field_has_help_and_help_renders(cls) -> None:
    base = {f.name for f in fields(SFTConfig if cls is HarnessfitSFTConfig else GRPOConfig)}
    ours = [f for f in fields(cls) if f.name not in base]
    assert ours and all(f.metadata.get("help") for f in ours), [f.name for f in ours if not f.metadata.get("help")]
    text = config_help(cls)
    assert "--audit_dir" in text and "--guard" in text and "--learning_rate" in text
    if cls is HarnessfitGRPOConfig:
        assert "--rewards" in text and "--judge" in text and "--sft_adapter" in text


def test_yaml_toml_flags_and_overrides(tmp_path) -> None:
    (tmp_path / "a.toml").write_text("learning_rate = 0.001\n[guard]\ninterval_s = 5\n")
    c = load_sft_config(tmp_path / "a.toml", ["--seed", "7", "--lora-r", "4", "--lora_alpha", "8"], model="m")
    assert c.learning_rate == 1e-3 and c.guard_rules.interval_s == 5 and c.seed == 7 and c.model == "m"
    assert (c.lora_r, c.lora_alpha) == (4, 8)
    (tmp_path / "b.yaml").write_text(
        "learning_rate: 1e-3\ngradient_checkpointing: auto\nrecords_per_row: auto\nliger: off\nsources: [pi]\n"
    )
    c = load_sft_config(tmp_path / "b.yaml", ["--learning_rate", "2e-3"])
    assert c.learning_rate == 2e-3 and c.records_per_row is None and c.liger == "off" and c.sources == ["pi"]
    assert c.recipe_record["set"]["learning_rate"] == "1e-3" and c.recipe_record["flags"] == ["--learning_rate", "2e-3"]
    g = load_grpo_config(None, ["--rewards", '{"format": 1, "reference_match": 2}'])
    assert g.rewards == {"format": 1.0, "reference_match": 2.0}


def test_cross_field_errors_name_cause_and_fix(tmp_path) -> None:
    p = tmp_path / "r.yaml"
    cases = [
        ("records_per_row: 3\n", "does not divide.*pick a divisor"),
        ("save_steps: 75\neval_steps: 50\n", "multiple of eval_steps"),
        ("lora_r: 64\nlora_alpha: 4\n", "set lora_alpha to about 2 x lora_r"),
        ("lr_scheduler_type: cosinus\n", "unknown learning-rate scheduler 'cosinus'.*cosine_with_min_lr"),
        ("guard: {interval_s: -1}\n", "guard.interval_s"),
        ("max_length: 3072\n", "would truncate audited records.*set max_record_length"),
    ]
    for text, pattern in cases:
        p.write_text(text)
        with pytest.raises(UserError, match=pattern):
            load_sft_config(p)
    grpo_cases = [
        ("num_generations: 1\n", "needs at least 2 completions"),
        ("temperature: 0\n", "set temperature > 0"),
        ("rewards: {judge: 1.0}\n", "judge.base_url / judge.model are unset"),
        ("rewards: {speed: 1.0}\n", "unknown reward component 'speed'"),
        ("rewards: {length: 1.0}\n", "no score component has a positive weight"),
        ("per_device_train_batch_size: 3\n", r"generation_batch_size \(3\) must be divisible by num_generations"),
        ("judge: {timeout: 3}\n", "judge.timeout"),
        ("sft_adapter: /nonexistent\n", "not an adapter folder"),
    ]
    for text, pattern in grpo_cases:
        p.write_text(text)
        with pytest.raises(UserError, match=pattern):
            load_grpo_config(p)


def test_unknown_and_renamed_keys_are_one_line(tmp_path) -> None:
    p = tmp_path / "r.yaml"
    p.write_text("lora_rank: 8\n")
    with pytest.raises(UserError, match=r"unknown recipe key 'lora_rank'.*did you mean 'lora_r'"):
        load_sft_config(p)
    p.write_text("grad_accum: 8\n")
    with pytest.raises(UserError, match=r"'grad_accum' .* is now 'gradient_accumulation_steps'"):
        load_sft_config(p)
    with pytest.raises(UserError, match=r"unknown flag\(s\).*--lora_rank"):
        load_sft_config(None, ["--lora_rank", "8"])
    with pytest.raises(UserError, match=r"learning_rate.*invalid float value: 'fast'"):
        load_sft_config(None, ["--learning_rate", "fast"])


@pytest.mark.parametrize("name", ["smollm2-cpu-demo", "qwen3-0.6b", "nemotron-cascade-8b"])
def test_example_sft_recipes_load(name) -> None:
    c = load_sft_config(REPO / "examples" / "recipes" / f"{name}.yaml")
    assert c.model


@pytest.mark.parametrize("name", ["grpo-cpu", "grpo-published"])
def test_example_grpo_recipes_load(name) -> None:
    c = load_grpo_config(REPO / "examples" / "recipes" / f"{name}.yaml")
    assert c.model and c.rewards
