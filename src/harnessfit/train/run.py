"""What every training run shares (SFT and GRPO): the run folder and its resume policy, the audit the run must
match, the base model, the callbacks (metrics JSONL, TensorBoard, health guard, per-rank tallies), the adapter
with its pins.

```
OUT/checkpoints/checkpoint-N/   resumable (optimizer, scheduler, RNG, data position)
OUT/adapter/                    final adapter (safetensors) + harnessfit_adapter.json (base id + revision pinned)
OUT/metrics.jsonl  OUT/guard.jsonl  OUT/tensorboard/  OUT/skipped.jsonl  OUT/recipe.json  OUT/result.json
```
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import torch
from rich.console import Console
from transformers import TrainerCallback

from harnessfit.core.jsonio import read_jsonl, write_jsonl
from harnessfit.errors import UserError
from harnessfit.models import load_error, model_revision, resolve_model, template_info
from harnessfit.train.guard import HealthGuard, ReadingSource
from harnessfit.train.guard_rules import GuardRules

__all__ = [
    "STOPPED_EXIT_CODE",
    "ADAPTER_META",
    "rank",
    "world",
    "newest_checkpoint",
    "model_fingerprint",
    "RunDir",
    "prepare_run",
    "truncate_log",
    "Audited",
    "open_audit",
    "check_matches_audit",
    "MetricsLog",
    "GuardStop",
    "RankTally",
    "RunCallbacks",
    "run_callbacks",
    "write_rank_tally",
    "save_adapter",
    "write_recipe",
    "model_pin",
]

STOPPED_EXIT_CODE = 3
ADAPTER_META = "harnessfit_adapter.json"


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def world() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def newest_checkpoint(ckpt_dir: Path) -> Path | None:
    """The newest *complete* checkpoint (``trainer_state.json`` is written last, so a folder cut by ``kill -9``
    mid-save lacks it and is skipped)."""
    if not ckpt_dir.is_dir():
        return None
    done = [
        p
        for p in ckpt_dir.glob("checkpoint-*")
        if (p / "trainer_state.json").is_file() and p.name.split("-")[-1].isdigit()
    ]
    return max(done, key=lambda p: int(p.name.split("-")[-1]), default=None)


def model_fingerprint(path: Path) -> str:
    """A cheap content pin for a local model folder: SHA-256 of config.json plus each weight file's name and size."""
    h = hashlib.sha256()
    cfg = path / "config.json"
    if cfg.is_file():
        h.update(cfg.read_bytes())
    for f in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")) + sorted(path.glob("*.gguf")):
        h.update(f"{f.name}:{f.stat().st_size}\n".encode())
    return "sha256:" + h.hexdigest()


@dataclass
class RunDir:
    """The run folder and where a run starts: ``resume_from`` is the checkpoint to continue (None = step 0)."""

    out_dir: Path
    resume_from: Path | None

    @property
    def ckpt_dir(self) -> Path:
        return self.out_dir / "checkpoints"

    @property
    def metrics_path(self) -> Path:
        return self.out_dir / "metrics.jsonl"

    @property
    def resume_step(self) -> int:
        return int(self.resume_from.name.split("-")[-1]) if self.resume_from is not None else 0


def prepare_run(out_dir: Path, resume: bool, console: Console, logs: tuple[str, ...] = ()) -> RunDir:
    """Resume policy: ``--resume`` continues from the newest complete checkpoint; without it, a folder that holds
    checkpoints is refused. The metrics (and ``logs``, other per-step JSONL files) are cut back to the checkpoint
    so each curve stays single, or removed when starting from step 0."""
    out_dir = Path(out_dir).resolve()
    ckpt_dir = out_dir / "checkpoints"
    resume_from = newest_checkpoint(ckpt_dir) if resume else None
    if resume and resume_from is None:
        console.print(f"[yellow]--resume: no complete checkpoint in {ckpt_dir}; starting from step 0[/]")
    if not resume and newest_checkpoint(ckpt_dir) is not None:
        raise UserError(f"{out_dir} already holds checkpoints: pass --resume to continue, or choose another --out")
    run = RunDir(out_dir, resume_from)
    out_dir.mkdir(parents=True, exist_ok=True)
    if rank() == 0:
        for path in [run.metrics_path, *(out_dir / name for name in logs)]:
            if resume_from is not None:
                truncate_log(path, run.resume_step)
            elif path.exists():
                path.unlink()
    return run


def truncate_log(path: Path, step: int) -> None:
    """Drop rows logged after ``step`` (they will be logged again after a resume)."""
    if path.is_file():
        write_jsonl(path, [r for r in read_jsonl(path) if r.get("step", 0) <= step])


@dataclass
class Audited:
    """The audit a run trains against: its meta.json, the tokenizer it saved, and the base model it names."""

    audit_dir: Path
    meta: dict[str, Any]
    spec: str
    model_path: str
    tokenizer: Any

    @property
    def stop_ids(self) -> list[int]:
        return [int(i) for i in self.meta.get("stop_token_ids") or []]


def open_audit(audit_dir: str | None, model: str | None) -> Audited:
    """Load the audit's meta and tokenizer and check the base model and template are the audit's (one-line errors
    name what differs and the fix)."""
    from transformers import AutoTokenizer

    # heavy: train.data pulls datasets/pyarrow (run itself does not)
    from harnessfit.train.data import load_meta

    if not audit_dir:
        raise UserError(
            "the recipe names no audit_dir: set audit_dir: to the folder `harnessfit audit DATASET` wrote "
            "(by default DATASET-audit beside the dataset), or pass --audit-dir"
        )
    path = Path(audit_dir).expanduser().resolve()
    meta = load_meta(path)
    spec = model or meta.get("model")
    if not spec:
        raise UserError("recipe has no model and the audit's meta.json names none: set model: in the recipe")
    resolved = resolve_model(str(spec))
    tok_dir = path / "tokenizer"
    if not tok_dir.is_dir():
        raise UserError(
            f"no tokenizer/ in {path}: training uses the tokenizer the audit saved; re-run `harnessfit audit`"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(tok_dir)
    except Exception as exc:  # noqa: BLE001 - one line for the user
        raise load_error("the audit's tokenizer", tok_dir, exc) from None
    check_matches_audit(meta, path, str(spec), resolved, tokenizer)
    return Audited(path, meta, str(spec), str(resolved), tokenizer)


def check_matches_audit(meta: dict, audit_dir: Path, spec: str, resolved: Path | str, tokenizer) -> None:
    """Training must use the base model and the template the audit tokenized with; say which differs and the fix."""
    for key in ("resolved", "template_sha256"):
        if key not in meta:
            raise UserError(
                f"{audit_dir}/tokenized/meta.json lacks {key!r}: it was not written by this version of "
                "`harnessfit audit`; re-run the audit"
            )
    audited, pinned = meta["resolved"], meta.get("revision")
    now = model_revision(resolved)
    same = (now == pinned) if pinned else (str(resolved) == str(audited))
    if not same:
        what = f"revision {pinned[:12]}…, found {(now or 'none')[:12]}" if pinned else f"{audited}"
        raise UserError(
            f"base model {spec!r} ({resolved}) is not the one the audit at {audit_dir} tokenized with "
            f"({what}): set model: {meta.get('model') or audited} in the recipe, or re-run "
            f"`harnessfit audit DATASET --model {spec}`"
        )
    sha = template_info(tokenizer).sha256
    if sha != meta["template_sha256"]:
        raise UserError(
            f"the chat template in {audit_dir}/tokenizer (sha256 {sha[:12]}…) differs from the one the "
            f"audit recorded ({str(meta['template_sha256'])[:12]}…): the tokenizer folder was changed "
            "after the audit; re-run `harnessfit audit` so masks and template agree"
        )


def model_pin(model, model_path: str) -> str | None:
    """What pins the base: the hub revision, else a fingerprint of the local folder."""
    revision = getattr(model.config, "_commit_hash", None)
    return revision or (model_fingerprint(Path(model_path)) if Path(model_path).is_dir() else None)


class MetricsLog(TrainerCallback):
    """Every log row (losses, rewards, lr, eval metrics) appended to ``metrics.jsonl`` as it happens."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        row = {"step": state.global_step, "epoch": round(state.epoch or 0.0, 6)}
        row.update({k: (float(v) if isinstance(v, (int, float)) else v) for k, v in logs.items()})
        with self.path.open("ab") as fh:
            fh.write(orjson.dumps(row) + b"\n")


class GuardStop(TrainerCallback):
    """Turns the guard's stop flag into a graceful stop: save a checkpoint at this step, then end training.

    Under several processes the flag is max-reduced so every rank stops at the same step."""

    def __init__(self, guard: HealthGuard | None) -> None:
        self.guard = guard
        self.fired = False

    def _flag(self) -> bool:
        local = bool(self.guard and self.guard.should_stop())
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            dev = "cuda" if torch.cuda.is_available() and torch.distributed.get_backend() == "nccl" else "cpu"
            t = torch.tensor([1.0 if local else 0.0], device=dev)
            torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX)
            return bool(t.item() > 0)
        return local

    def on_step_end(self, args, state, control, **kwargs):
        if self._flag():
            self.fired = True
            control.should_save = True
            control.should_training_stop = True


class RankTally(TrainerCallback):
    """Counts the micro-batches this process ran (so a multi-process run can show that every rank trained)."""

    def __init__(self) -> None:
        self.micro_batches = 0

    def on_substep_end(self, args, state, control, **kwargs):
        self.micro_batches += 1

    def on_step_end(self, args, state, control, **kwargs):
        self.micro_batches += 1


@dataclass
class RunCallbacks:
    """The callbacks a run passes to its trainer, and the pieces it reads back afterwards."""

    callbacks: list
    guard: HealthGuard | None
    guard_stop: GuardStop
    tally: RankTally

    def close(self) -> None:
        if self.guard is not None:
            self.guard.close()

    def stop_reason(self) -> str | None:
        stop = self.guard.reason() if (self.guard is not None and self.guard_stop.fired) else None
        return stop.reason if stop else None


def run_callbacks(
    run: RunDir, rules: GuardRules, reading_source: ReadingSource | None, console: Console
) -> RunCallbacks:
    """Metrics JSONL, the health guard (rank 0), per-rank tallies, TensorBoard and a progress bar (rank 0)."""
    from transformers.integrations import TensorBoardCallback
    from trl.trainer.callbacks import RichProgressCallback

    guard = HealthGuard(rules, run.out_dir, reading_source).start() if rules.enabled and rank() == 0 else None
    guard_cb, tally = GuardStop(guard), RankTally()
    callbacks: list = [MetricsLog(run.metrics_path), guard_cb, tally]
    if rank() == 0:
        from torch.utils.tensorboard import SummaryWriter

        callbacks.append(TensorBoardCallback(tb_writer=SummaryWriter(log_dir=str(run.out_dir / "tensorboard"))))
        if console.is_terminal:
            callbacks.append(RichProgressCallback())
    return RunCallbacks(callbacks, guard, guard_cb, tally)


def _adapter_digest(model) -> str:
    h = hashlib.sha256()
    for name, p in sorted(model.named_parameters()):
        if p.requires_grad:
            h.update(name.encode())
            h.update(p.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()


def write_rank_tally(run: RunDir, trainer, tally: RankTally) -> None:
    ranks_dir = run.out_dir / "ranks"
    ranks_dir.mkdir(exist_ok=True)
    (ranks_dir / f"rank{rank()}.json").write_bytes(
        orjson.dumps(
            {
                "rank": rank(),
                "world_size": world(),
                "global_step": trainer.state.global_step,
                "micro_batches": tally.micro_batches,
                "adapter_sha256": _adapter_digest(trainer.model),
            }
        )
    )


def write_recipe(run: RunDir, cfg) -> None:
    """``recipe.json``: the recipe file, what it and the flags set, the health guard's rules (top-level, where the
    HTML report's resource envelope reads them) and every resolved field."""
    if rank() == 0:
        record = {
            **getattr(cfg, "recipe_record", {}),
            "config_class": type(cfg).__name__,
            "guard": cfg.guard_rules.model_dump(),
            "resolved": cfg.to_dict(),
        }
        (run.out_dir / "recipe.json").write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2, default=str))


def save_adapter(trainer, tokenizer, out_dir: Path, meta: dict[str, Any]) -> Path:
    """The trained adapter (the ``default`` one only: GRPO may hold a frozen ``ref`` copy) + tokenizer + pins."""
    adapter_dir = out_dir / "adapter"
    if adapter_dir.exists():
        shutil.rmtree(adapter_dir)
    trainer.model.save_pretrained(str(adapter_dir), selected_adapters=["default"])
    tokenizer.save_pretrained(str(adapter_dir))
    (adapter_dir / ADAPTER_META).write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2, default=str))
    return adapter_dir
