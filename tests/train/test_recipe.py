from pathlib import Path

import pytest

from harnessfit.errors import UserError
from harnessfit.train.recipe import RecipeSFTConfig, TrainRecipe, load_recipe

REPO = Path(__file__).resolve().parents[2]


def test_defaults_are_the_published_recipe():
    r = TrainRecipe()
    assert (r.lora_r, r.lora_alpha, r.lora_dropout, r.target_modules) == (32, 64, 0.05, "all-linear")
    assert (r.batch_size, r.grad_accum, r.learning_rate, r.epochs, r.seed, r.eval_every) == (1, 8, 1e-4, 1.0, 42, 50)
    assert r.quantization == "auto" and r.guard.gpu_temp_c == 84 and r.guard.gpu_temp_readings == 2
    assert r.guard.min_host_mem_gib == 4 and r.guard.min_free_disk_gib == 20 and r.guard.interval_s == 30
    # every field carries a help text
    assert all(f.description for f in TrainRecipe.model_fields.values())


def test_sft_config_subclass_keeps_recipe_defaults(tmp_path):
    args = RecipeSFTConfig(output_dir=str(tmp_path), use_cpu=True)
    assert args.learning_rate == 1e-4 and args.gradient_accumulation_steps == 8 and args.eval_on_start
    assert args.eval_steps == 50 and args.seed == 42


def test_cross_field_errors_name_cause_and_fix(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("records_per_row: 3\n")
    with pytest.raises(UserError, match="does not divide.*pick a divisor"):
        load_recipe(p)
    p.write_text("save_every: 75\neval_every: 50\n")
    with pytest.raises(UserError, match="multiple of eval_every"):
        load_recipe(p)
    p.write_text("lora_rank: 8\n")
    with pytest.raises(UserError, match="lora_rank"):
        load_recipe(p)


def test_yaml_and_toml_with_overrides(tmp_path):
    (tmp_path / "a.toml").write_text('learning_rate = 0.001\n[guard]\ninterval_s = 5\n')
    r = load_recipe(tmp_path / "a.toml", seed=7, model=None)
    assert r.learning_rate == 1e-3 and r.guard.interval_s == 5 and r.seed == 7


@pytest.mark.parametrize("name", ["smollm2-cpu-demo", "qwen3-0.6b", "nemotron-cascade-8b"])
def test_example_recipes_load(name):
    r = load_recipe(REPO / "examples" / "recipes" / f"{name}.yaml")
    assert r.model
