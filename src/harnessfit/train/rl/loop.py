"""``train_rl``: steps of (G real Pi episodes per task → episode rewards → group advantages → one TRL-loss update).

Run folder::

    OUT/metrics.jsonl      one row per step: reward and complete-loop rate, unscored and zero-variance groups,
                           TRL's loss metrics (loss, clip ratios, entropy, kl), sampled tokens, seconds
    OUT/episodes.jsonl     one row per episode: every reward component (None with why), advantage, turns,
                           segments, sampled tokens, its folder under rollouts/, and its eval facts and metrics
    OUT/rollouts/step-NNNN/episodes/<task>/seed-<g>/   the eval's episode folders (events, session, checker)
    OUT/capture/<key>.jsonl                            the engine's capture of each episode (outside the sandbox)
    OUT/tb/                TensorBoard scalars        OUT/state/   resume state (``train.rl.state``)
    OUT/adapter/           the trained adapter        OUT/rl_report.md   the report section (``train.rl.report``)
    OUT/eval_before/, OUT/eval_after/   the held-out evals (``eval_suite``; ``train.rl.heldout``)
    OUT/run.json           how the invocation ended (max_steps, the ``max_seconds`` budget, the health guard) and
                           its wall seconds (eval_before, steps, eval_after, total)
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import torch
from rich.console import Console
from rich.markup import escape

from harnessfit.errors import UserError
from harnessfit.eval.episode import Episode
from harnessfit.eval.run import episode_line
from harnessfit.eval.sandbox import require_sandbox
from harnessfit.eval.scorers import load_card_or_none
from harnessfit.eval.task import load_suite
from harnessfit.harness.card import load_harness
from harnessfit.harness.versions import model_harness
from harnessfit.rewards.reward_set import RewardSet
from harnessfit.train.guard import HealthGuard
from harnessfit.train.rl.heldout import HeldoutEvals, eval_suite_path
from harnessfit.train.rl.judge import judge_client
from harnessfit.train.rl.policy import PolicyServer, load_policy
from harnessfit.train.rl.report import write_rl_report
from harnessfit.train.rl.rewards import TURN_COMPONENTS, group_advantages
from harnessfit.train.rl.rollout import Rollout, RolloutSettings, run_rollouts
from harnessfit.train.rl.state import refuse_or_resume, save_state
from harnessfit.train.rl.update import Updater
from harnessfit.train.run import ADAPTER_META

__all__ = ["RLResult", "StepsEnd", "train_rl", "run_steps", "pick_tasks"]


@dataclass
class RLResult:
    out_dir: Path
    steps: int
    status: str  # completed | stopped
    adapter_dir: Path | None
    report: Path
    stop_reason: str | None = None
    ended: str = ""  # why no further step ran: max_steps reached, the time budget spent, the health guard
    seconds: dict[str, float] | None = None  # wall seconds: eval_before, steps, eval_after, total (OUT/run.json)


def pick_tasks(tasks: list[Any], step: int, per_step: int, seed: int) -> list[Any]:
    """The step's tasks: a fixed shuffle of the suite (by ``seed``), taken in turn — the same on a resumed run."""
    order = list(tasks)
    random.Random(seed).shuffle(order)
    start = ((step - 1) * per_step) % len(order)
    return [order[(start + i) % len(order)] for i in range(min(per_step, len(order)))]


def _append(path: Path, row: dict[str, Any]) -> None:
    with path.open("ab") as fh:
        fh.write(orjson.dumps(row, default=str) + b"\n")


def _settings(cfg: Any, policy: Any, sandbox: bool) -> RolloutSettings:
    spec = model_harness(cfg.harness, cfg.model, cfg.sft_adapter, stage="train rl")
    card = load_harness(spec)
    names = [n for n in cfg.rewards if n in TURN_COMPONENTS]
    reward_set = RewardSet(
        {n: 1.0 for n in names} or {"format": 1.0}, tokenizer=policy.tokenizer, stop_ids=policy.stop_ids, card=card
    )
    return RolloutSettings(
        harness=spec,
        card=load_card_or_none(harness=spec),
        weights=dict(cfg.rewards),
        reward_set=reward_set,
        tools=[{"function": {"name": n}} for n in card.default_tools],
        max_turns=cfg.episode_max_turns,
        max_seconds=cfg.episode_max_seconds,
        workers=cfg.workers,
        sandbox=sandbox,
        context_window=policy.engine.context_window,
        judge=judge_client(cfg.judge) if cfg.rewards.get("judge") else None,
    )


def _step_row(step: int, rollouts: list[Rollout], update: dict[str, Any], seconds: float) -> dict[str, Any]:
    scored = [r for r in rollouts if r.reward.reward is not None]
    groups: dict[str, list[Rollout]] = {}
    for r in rollouts:
        groups.setdefault(r.task_id, []).append(r)
    zero = sum(1 for g in groups.values() if all(r.advantage in (None, 0.0) for r in g))
    loops = [bool(r.metrics.complete_loop) for r in rollouts if r.metrics is not None and r.reward.reward is not None]
    return {
        "step": step,
        "episodes": len(rollouts),
        "scored": len(scored),
        "unscored": len(rollouts) - len(scored),
        "reward_mean": sum(r.reward.reward for r in scored) / len(scored) if scored else None,  # type: ignore[misc]
        "complete_loop_rate": sum(loops) / len(loops) if loops else None,
        "groups": len(groups),
        "zero_variance_groups": zero,
        "tasks": sorted(groups),
        "seconds": round(seconds, 1),
        **update,
    }


def _advantages(rollouts: list[Rollout], scale: str) -> None:
    groups: dict[str, list[Rollout]] = {}
    for r in rollouts:
        groups.setdefault(r.task_id, []).append(r)
    for group in groups.values():
        for r, adv in zip(group, group_advantages([r.reward.reward for r in group], scale), strict=True):
            r.advantage = adv


def _tb(out_dir: Path) -> Any:
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(log_dir=str(out_dir / "tb"))


@dataclass
class StepsEnd:
    """How the steps of one invocation ended: the last step done, the health guard's reason (None: not stopped),
    and the sentence saying why no further step ran."""

    step: int
    stop: str | None
    ended: str


def run_steps(
    first: int,
    last: int,
    do_step: Callable[[int], None],
    *,
    max_seconds: float | None,
    should_stop: Callable[[], str | None],
    clock: Callable[[], float] = time.monotonic,
) -> StepsEnd:
    """``do_step(n)`` for ``n`` in ``first..last``. The time budget: no step starts once ``max_seconds`` have passed
    since the first began (a started step runs to its end); the health guard (``should_stop``) is asked after each."""
    started, step = clock(), first - 1
    for n in range(first, last + 1):
        spent = clock() - started
        if max_seconds is not None and spent >= max_seconds:
            return StepsEnd(step, None, f"time budget of {max_seconds:g} s spent after step {step} ({spent:.0f} s)")
        do_step(n)
        step = n
        if (reason := should_stop()) is not None:
            return StepsEnd(step, reason, f"stopped by the health guard after step {step}: {reason}")
    return StepsEnd(step, None, f"max_steps {last} reached")


def _guard_stop(guard: Any) -> str | None:
    if guard is None or not guard.should_stop():
        return None
    reason = guard.reason()
    return reason.reason if reason is not None else "health guard"


def train_rl(
    cfg: Any,
    out_dir: Path,
    *,
    resume: bool = False,
    reading_source: Any = None,
    sandbox: bool = True,
    progress: bool = True,
) -> RLResult:
    """Run ``cfg.max_steps`` steps on ``cfg.suite`` (see the module docstring), within ``cfg.max_seconds``, with the
    held-out eval before and after when ``cfg.eval_suite`` is set; ``reading_source`` replaces the health guard's
    sensors (tests)."""
    console, t0 = Console(stderr=True), time.monotonic()
    tasks, held_suite = _load_suites(cfg, sandbox)
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    found = refuse_or_resume(out_dir, resume)
    policy, settings, updater, first = _start(cfg, found, sandbox, console)
    (out_dir / "recipe.json").write_bytes(
        orjson.dumps(
            {
                **getattr(cfg, "recipe_record", {}),
                "config_class": type(cfg).__name__,
                "resolved": cfg.to_dict(),
                "harness": settings.harness,
            },
            default=str,
        )
    )
    console.print(
        f"[dim]rl:[/] {len(tasks)} tasks, {cfg.tasks_per_step} a step x {cfg.num_generations} episodes, "
        f"{escape(settings.harness)}, policy {escape(policy.adapter_source or 'fresh LoRA on ' + cfg.model)}"
    )
    guard = HealthGuard(cfg.guard_rules, out_dir, reading_source).start() if cfg.guard_rules.enabled else None
    writer, adapter_dir = _tb(out_dir), None
    missing: dict[str, str] = {}  # held-out evals that did not run, and why
    held = HeldoutEvals(cfg, held_suite, out_dir, settings, console)

    def do_step(step: int) -> None:
        _one_step(cfg, step, tasks, server.base, out_dir, settings, updater, writer, console, progress)
        save_state(out_dir, step, policy.model, updater.optimizer)

    try:
        with PolicyServer(policy.engine, out_dir / "capture", max_queue=max(4, cfg.workers)) as server:
            missing.update(held.before(server.base, policy.adapter_source, resumed=found is not None))
            t_steps = time.monotonic()
            end = run_steps(
                first, cfg.max_steps, do_step, max_seconds=cfg.max_seconds, should_stop=lambda: _guard_stop(guard)
            )
            seconds = {"steps": time.monotonic() - t_steps}
            console.print(f"[dim]rl:[/] {escape(end.ended)}")
            if end.stop is None:
                adapter_dir = _save_adapter(cfg, policy, settings, out_dir, end.step)
                missing.update(held.after(server.base, adapter_dir))
            elif held.suite is not None:
                missing["after"] = "the health guard stopped the run; no adapter was saved"
    finally:
        writer.close()
        if guard is not None:
            guard.close()
    status = "stopped" if end.stop else "completed"
    seconds = {k: round(v, 1) for k, v in {**held.seconds, **seconds, "total": time.monotonic() - t0}.items()}
    (out_dir / "run.json").write_bytes(
        orjson.dumps(
            {
                "status": status,
                "steps": end.step,
                "ended": end.ended,
                "stop_reason": end.stop,
                "seconds": seconds,
                "missing_evals": missing,
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    report = write_rl_report(out_dir, status=status, stop_reason=end.stop, ended=end.ended, missing_evals=missing)
    return RLResult(out_dir, end.step, status, adapter_dir, report, end.stop, end.ended, seconds)


def _load_suites(cfg: Any, sandbox: bool) -> tuple[list[Any], Path | None]:
    """The training tasks and the held-out suite (None: unset): one-line errors before any loading."""
    if not cfg.suite:
        raise UserError("give the training suite: `harnessfit train rl RECIPE --suite DIR` (or suite: in the recipe)")
    tasks = load_suite(Path(cfg.suite))
    if not tasks:
        raise UserError(f"no tasks in {cfg.suite}")
    held = eval_suite_path(cfg.eval_suite)
    if held is not None and not load_suite(held):
        raise UserError(f"no tasks in the eval_suite {held}")
    if sandbox:
        require_sandbox()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    return tasks, held


def _start(cfg: Any, found: Any, sandbox: bool, console: Console) -> tuple[Any, RolloutSettings, Any, int]:
    """The policy (resumed or starting), the rollout settings, the updater and the first step to run."""
    policy = load_policy(cfg, found[1] if found else None)
    settings = _settings(cfg, policy, sandbox)
    updater = Updater(cfg, policy.model, policy.tokenizer)
    if found is None:
        torch.manual_seed(cfg.seed)
        return policy, settings, updater, 1
    updater.optimizer.load_state_dict(found[2]["optimizer"])
    torch.set_rng_state(found[2]["torch_rng"])
    random.setstate(found[2]["python_rng"])
    console.print(f"[dim]rl:[/] resuming after step {found[0]}")
    return policy, settings, updater, found[0] + 1


def _one_step(
    cfg: Any,
    step: int,
    tasks: list[Any],
    base: str,
    out_dir: Path,
    settings: RolloutSettings,
    updater: Any,
    writer: Any,
    console: Console,
    progress: bool,
) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    t0 = time.monotonic()
    chosen = pick_tasks(tasks, step, cfg.tasks_per_step, cfg.seed)
    run_dir = out_dir / "rollouts" / f"step-{step:04d}"
    with Progress(
        TextColumn(f"rl step {step} episodes"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not (progress and console.is_terminal),
        transient=True,
    ) as bar:
        tid = bar.add_task("episodes", total=len(chosen) * cfg.num_generations)

        def done(ro: Rollout) -> None:
            bar.advance(tid)
            line = episode_line(Episode(facts=ro.facts, metrics=ro.metrics), label=f"rl step {step}")
            reward = "unscored" if ro.reward.reward is None else f"{ro.reward.reward:.3f}"
            console.print(f"{line}, reward {reward}", markup=False, highlight=False, soft_wrap=True)

        rollouts = run_rollouts(step, chosen, cfg.num_generations, base, out_dir / "capture", run_dir, settings, done)
    _advantages(rollouts, cfg.scale_rewards)
    for ro in rollouts:
        row = ro.row()
        row["episode_dir"] = str((run_dir / row["episode_dir"]).relative_to(out_dir))
        _append(out_dir / "episodes.jsonl", row)
    batch = [(seg, ro.advantage) for ro in rollouts if ro.advantage is not None for seg in ro.segments]
    update = updater.step(batch)
    row = _step_row(step, rollouts, update, time.monotonic() - t0)
    _append(out_dir / "metrics.jsonl", row)
    for key, value in row.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
            writer.add_scalar(f"rl/{key}", value, step)
    writer.flush()
    console.print(
        f"rl step {step}: reward {row['reward_mean']}, complete loops {row['complete_loop_rate']}, "
        f"{row['unscored']} unscored, {row['zero_variance_groups']}/{row['groups']} zero-variance groups, "
        f"loss {update.get('loss')}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if row["groups"] and row["zero_variance_groups"] == row["groups"]:
        console.print(f"[yellow]rl step {step}: every group has zero variance: no update signal[/]")


def _save_adapter(cfg: Any, policy: Any, settings: RolloutSettings, out_dir: Path, step: int) -> Path:
    import shutil

    adapter_dir = out_dir / "adapter"
    shutil.rmtree(adapter_dir, ignore_errors=True)
    policy.model.save_pretrained(str(adapter_dir), selected_adapters=["default"])
    policy.tokenizer.save_pretrained(str(adapter_dir))
    meta = {
        "harness": settings.harness,
        "base_model": cfg.model,
        "sft_adapter": cfg.sft_adapter,
        "stop_token_ids": policy.stop_ids,
        "global_step": step,
        "trainer": "rl",
        "suite": cfg.suite,
    }
    (adapter_dir / ADAPTER_META).write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2, default=str))
    return adapter_dir
