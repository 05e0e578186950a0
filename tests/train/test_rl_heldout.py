"""train rl's held-out before/after through the real Pi: ``HeldoutEvals`` runs the eval's ``run_eval`` against the
endpoint the run serves (here a scripted golden model stands in for the policy), into ``eval_before`` and
``eval_after``, and the report's table gives the rates with their intervals."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.pi
def test_held_out_evals_before_and_after_in_the_real_pi(tmp_path: Path) -> None:
    from harnessfit.eval.scripted_models import responder_for
    from harnessfit.eval.task import load_suite
    from harnessfit.harness.scripted import ScriptedEndpoint
    from harnessfit.harness.versions import model_harness
    from harnessfit.train.rl.heldout import HeldoutEvals
    from harnessfit.train.rl.report import write_rl_report

    suite = tmp_path / "suite"
    shutil.copytree(REPO / "examples" / "tasks" / "default" / "edit_constant", suite / "edit_constant")
    out = tmp_path / "run"
    out.mkdir()
    cfg = SimpleNamespace(eval_seeds=1, workers=1, episode_max_turns=8, episode_max_seconds=300.0, model="m")
    settings = SimpleNamespace(
        harness=model_harness(None, None, None, stage="train rl"), sandbox=True, context_window=None
    )
    held = HeldoutEvals(cfg, suite, out, settings, Console(stderr=True))
    with ScriptedEndpoint(responder_for("scripted:golden", load_suite(suite)), model_id="policy") as ep:
        base = ep.base_url.removesuffix("/v1")
        assert held.before(base, "sft/adapter", resumed=False) == {}
        assert held.after(base, out / "adapter") == {}
    assert set(held.seconds) == {"eval_before", "eval_after"}
    for phase in ("before", "after"):
        assert (out / f"eval_{phase}" / "episodes" / "edit_constant" / "seed-0").is_dir()
    text = write_rl_report(out).read_text()
    loop = next(ln for ln in text.splitlines() if ln.startswith("| Complete loop"))
    assert loop.endswith("| 100% [21–100] (1/1) | 100% [21–100] (1/1) |")
    assert "different task suites" not in text
    # a resumed run keeps the finished before-eval, and says so when there is none
    assert HeldoutEvals(cfg, suite, out, settings, Console(stderr=True)).before(base, None, resumed=True) == {}
    shutil.rmtree(out / "eval_before")
    why = HeldoutEvals(cfg, suite, out, settings, Console(stderr=True)).before(base, None, resumed=True)
    assert "resumed" in why["before"]
