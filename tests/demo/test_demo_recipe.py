"""The recipe the demo (and ``bench/training_effect.py``) trains with: the plan's file, its passes when asked."""

from __future__ import annotations

from pathlib import Path

import yaml

from harnessfit.demo.pipeline import DemoPlan, demo_recipe


def test_the_demo_recipe_keeps_its_passes_unless_the_plan_names_them(tmp_path: Path) -> None:
    plan = DemoPlan(out=tmp_path / "demo", traces=None).resolved()
    written = yaml.safe_load(Path(plan.recipe).read_text())["num_train_epochs"]
    as_written = demo_recipe(plan, tmp_path / "audit")
    assert as_written.num_train_epochs == written
    assert as_written.audit_dir == str(tmp_path / "audit")
    assert as_written.model == "smollm2-135m"

    plan.epochs = 2
    two = demo_recipe(plan, tmp_path / "audit")
    assert two.num_train_epochs == 2
    # nothing else moves with it
    assert (two.learning_rate, two.lora_r, two.lora_target_modules) == (
        as_written.learning_rate,
        as_written.lora_r,
        as_written.lora_target_modules,
    )


def test_the_plan_model_replaces_the_recipe_model(tmp_path: Path) -> None:
    """`bench/training_effect.py --model SPEC`: another base model is trained (and evaluated) with the same recipe."""
    plan = DemoPlan(out=tmp_path / "demo", traces=None, model="/models/qwen3-0.6b").resolved()
    assert demo_recipe(plan, tmp_path / "audit").model == "/models/qwen3-0.6b"
