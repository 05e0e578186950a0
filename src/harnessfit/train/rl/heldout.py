"""The held-out before/after of ``train rl``: the eval's own ``run_eval`` of the policy on a held-out suite, once
before the first step (the starting policy: the SFT adapter, or the base under a fresh LoRA) and once after the last
(the trained adapter), whose before/after table ``train.rl.report`` writes.

The policy is evaluated where it is trained: the in-process engine (``train.rl.policy``) serves it at the run's
sampling ``temperature`` and output cap, under the episode caps of the training episodes, so the two evals differ in
the weights only. Sampling makes the seeds of a task independent tries. The eval folders, ``OUT/eval_before`` and
``OUT/eval_after``, are ``eval agent`` folders (``results.json``, ``results.md``, episodes); scores come from the
independent checker outside the sandbox, as in any eval. Their requests are captured under the keys
``eval-before`` and ``eval-after`` and never trained on.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessfit.errors import UserError

__all__ = ["PHASES", "HELDOUT_ROWS", "eval_suite_path", "eval_policy", "finished_eval", "HeldoutEvals"]

PHASES = ("before", "after")
# the rows of the report's table: eval.compare's row keys
HELDOUT_ROWS = ("complete_loop", "checker_passed", "tool_calls", "finished_with_response", "turn_cap_hit", "scored")


def eval_suite_path(value: str | None) -> Path | None:
    """The held-out suite folder of ``eval_suite`` (``default``: the demo's held-out default suite); None when
    unset. A folder that is not there is one line for the user, before anything loads."""
    if not value:
        return None
    if value == "default":
        # heavy: eval pulls fastapi/uvicorn (its endpoint); loaded when an RL run evaluates
        from harnessfit.eval.run import default_suite

        return default_suite()
    folder = Path(value)
    if not folder.is_dir():
        raise UserError(f"eval_suite {value}: no such folder (a task suite, or `default` for examples/tasks/default)")
    return folder


def finished_eval(out_dir: Path, phase: str) -> Path | None:
    """``OUT/eval_<phase>/results.json`` when that eval finished (status ``success``), else None."""
    # heavy: eval pulls fastapi/uvicorn (its endpoint); loaded when an RL run evaluates
    from harnessfit.eval.results import load_results

    path = Path(out_dir) / f"eval_{phase}" / "results.json"
    try:
        return path if path.is_file() and load_results(path).status == "success" else None
    except Exception:  # noqa: BLE001 - a file cut short by a kill: not finished
        return None


def eval_policy(
    cfg: Any,
    suite: Path,
    base: str,
    out_dir: Path,
    phase: str,
    *,
    harness: str,
    sandbox: bool,
    context_window: int | None,
    label: str,
    on_episode: Callable[[Any], None] | None = None,
) -> Path:
    """``run_eval`` of the policy served at ``base`` (``http://127.0.0.1:PORT``) on ``suite``, ``eval_seeds``
    episodes per task, into ``OUT/eval_<phase>`` (replaced); returns its ``results.json``."""
    # heavy: eval pulls fastapi/uvicorn (its endpoint); loaded when an RL run evaluates
    from harnessfit.eval.episode_runner import Endpoint
    from harnessfit.eval.run import run_eval

    folder = Path(out_dir) / f"eval_{phase}"
    shutil.rmtree(folder, ignore_errors=True)
    endpoint = Endpoint(f"{base}/v1", "policy", label, context_window, api_key=f"eval-{phase}")
    run_eval(
        endpoint,
        suite,
        folder,
        seeds=cfg.eval_seeds,
        workers=cfg.workers,
        max_turns=cfg.episode_max_turns,
        max_seconds=cfg.episode_max_seconds,
        sandbox=sandbox,
        harness=harness,
        progress=False,
        on_episode=on_episode,
    )
    return folder / "results.json"


class HeldoutEvals:
    """The two evals of a run (nothing when no held-out suite is set); each method returns the reasons of the evals
    that did not run (phase → reason) for the report."""

    def __init__(self, cfg: Any, suite: Path | None, out_dir: Path, settings: Any, console: Any) -> None:
        self.cfg, self.suite, self.out_dir, self.settings, self.console = cfg, suite, out_dir, settings, console
        self.seconds: dict[str, float] = {}  # eval_<phase> → wall seconds
        if suite is not None:  # an after-eval of an earlier invocation is not this run's
            shutil.rmtree(out_dir / "eval_after", ignore_errors=True)

    def before(self, base: str, source: str | None, *, resumed: bool) -> dict[str, str]:
        """The starting policy's eval; a resumed run keeps the one its first invocation finished."""
        if self.suite is None:
            return {}
        if resumed:
            if finished_eval(self.out_dir, "before") is not None:
                return {}
            return {
                "before": "the run was resumed and its first invocation had not finished this eval; the "
                "starting policy is no longer the one loaded"
            }
        self._run(base, "before", f"before: {source or 'fresh LoRA on ' + str(self.cfg.model)}")
        return {}

    def after(self, base: str, adapter_dir: Path) -> dict[str, str]:
        """The trained policy's eval (the weights just saved to ``adapter_dir``)."""
        if self.suite is not None:
            self._run(base, "after", f"after: {adapter_dir}")
        return {}

    def _run(self, base: str, phase: str, label: str) -> None:
        # heavy: eval pulls fastapi/uvicorn (its endpoint); loaded when an RL run evaluates
        from harnessfit.eval.results import load_results
        from harnessfit.eval.run import episode_line

        assert self.suite is not None
        t0 = time.monotonic()
        self.console.print(
            f"rl: held-out eval {phase}: {self.suite}, {self.cfg.eval_seeds} episode(s) per task",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        path = eval_policy(
            self.cfg,
            self.suite,
            base,
            self.out_dir,
            phase,
            harness=self.settings.harness,
            sandbox=self.settings.sandbox,
            context_window=self.settings.context_window,
            label=label,
            on_episode=lambda ep: self.console.print(
                episode_line(ep, label=f"eval {phase}"), markup=False, highlight=False, soft_wrap=True
            ),
        )
        self.seconds[f"eval_{phase}"] = time.monotonic() - t0
        rate = load_results(path).aggregates.get("rates", {}).get("complete_loop", {})
        self.console.print(
            f"rl: held-out {phase}: complete loops {rate.get('successes')}/{rate.get('n')}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
