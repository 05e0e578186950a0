"""``HarnessfitRLConfig``: TRL's ``GRPOConfig`` plus what multi-turn RL in the real harness needs.

TRL's fields keep their meaning: ``num_generations`` is G (episodes per task per step), ``temperature`` the
sampling temperature of the engine serving the policy, ``max_completion_length`` the engine's output cap per turn,
``loss_type`` / ``epsilon`` / ``epsilon_high`` / ``beta`` / ``scale_rewards`` the loss, ``max_steps`` the steps,
``learning_rate`` the AdamW step. harnessfit adds the suite, the policy to start from, the episode caps, the
episode reward weights (``train.rl.rewards``) and the health guard. Read with ``train.config.load_config`` (recipe
+ flags, one-line errors). No ``from __future__ import annotations``: ``HfArgumentParser`` reads the types.
"""

from dataclasses import dataclass, field
from pathlib import Path

from trl import GRPOConfig

from harnessfit.rewards import JudgeSettings
from harnessfit.train.config import ATTENTION_PROJECTIONS, _as_dict, _pydantic_error
from harnessfit.train.guard_rules import GuardRules
from harnessfit.train.rl.rewards import check_weights

__all__ = ["HarnessfitRLConfig"]


@dataclass
class HarnessfitRLConfig(GRPOConfig):
    """TRL's ``GRPOConfig`` + the RL-in-the-harness fields; defaults sized for a CPU and the embedded model."""

    command = "rl"  # `harnessfit train rl` (a class attribute, not a field)

    suite: str | None = field(
        default=None,
        metadata={"help": "Training task suite (`harnessfit tasks generate --split train ...`); also --suite DIR."},
    )
    model: str = field(default="smollm2-135m", metadata={"help": "Base model spec (alias, folder, HF id)."})
    sft_adapter: str | None = field(
        default=None,
        metadata={
            "help": "Start from this SFT adapter (OUT/adapter of `harnessfit train sft`), trained further; unset = a "
            "fresh LoRA on the base."
        },
    )
    harness: str | None = field(
        default=None,
        metadata={
            "help": "Target harness as pi@VERSION; default: the one the adapter was trained for, else the default."
        },
    )
    tasks_per_step: int = field(default=2, metadata={"help": "Tasks per step (each run num_generations times)."})
    workers: int = field(default=2, metadata={"help": "Episodes run at once."})
    episode_max_turns: int = field(default=4, metadata={"help": "Turn cap of each episode."})
    episode_max_seconds: float = field(default=300.0, metadata={"help": "Wall-clock cap of each episode."})
    max_seconds: float | None = field(
        default=None,
        metadata={
            "help": "Wall-clock budget of the steps in seconds (counted from the first step of this invocation; the "
            "held-out eval before and after is not in it): no new step starts once it is spent, a started step runs to "
            "its end; unset = max_steps alone."
        },
    )
    eval_suite: str | None = field(
        default=None,
        metadata={
            "help": "Held-out suite evaluated before the first step and after the last (OUT/eval_before, OUT/eval_after, "
            "a before/after table in rl_report.md): a task folder, or `default` (examples/tasks/default, the demo's "
            "held-out suite); unset = no held-out eval."
        },
    )
    eval_seeds: int = field(default=3, metadata={"help": "Episodes per held-out task in each eval."})
    rewards: dict | str | None = field(
        default=None,
        metadata={
            "help": "Episode reward weights, name: weight (checker_passed, complete_loop, format, arguments_object, "
            "schema_valid, tool_active, clean_end, judge, turn_cap, runaway); unset = train.rl.rewards.DEFAULT_RL_WEIGHTS "
            "(no judge)."
        },
    )
    judge: dict | str | None = field(
        default=None,
        metadata={
            "help": "LLM judge over the whole episode (the judge reward component; asked only when rewards.judge has "
            "a weight), an OpenAI-compatible endpoint: base_url, model, api_key_env, timeout_s (60), retries (1), "
            "max_tokens (400), temperature (0), context_chars (12000: of the episode's turns)."
        },
    )
    lora_r: int = field(default=16, metadata={"help": "LoRA rank of a fresh adapter."})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA alpha of a fresh adapter."})
    lora_dropout: float = field(
        default=0.0,
        metadata={"help": "LoRA dropout (0: the captured logprobs are the policy's, no dropout noise in the ratio)."},
    )
    lora_target_modules: list[str] = field(
        default_factory=lambda: list(ATTENTION_PROJECTIONS),
        metadata={"help": "Modules that get adapters (a fresh adapter)."},
    )
    guard: dict | str | None = field(
        default=None,
        metadata={"help": "Health guard stop rules (as train sft/grpo): enabled, interval_s, min_host_mem_gib, ..."},
    )
    threads: int | None = field(default=None, metadata={"help": "torch CPU threads (unset = leave as is)."})
    # -- TRL defaults changed for episodes on a CPU
    num_generations: int | None = field(default=2, metadata={"help": "Episodes per task per step (G)."})
    max_completion_length: int | None = field(default=256, metadata={"help": "Output cap of one turn (tokens)."})
    max_steps: int = field(default=10, metadata={"help": "Steps (each: rollouts, then one update)."})
    learning_rate: float = field(default=1e-5, metadata={"help": "AdamW learning rate."})
    beta: float = field(default=0.0, metadata={"help": "KL coefficient to the base without the adapter (0 = off)."})
    per_device_train_batch_size: int = field(default=2, metadata={"help": "Unused by train rl (TRL's check)."})
    use_cpu: bool = field(
        default=True, metadata={"help": "Train on the CPU (the engine serves from the same process)."}
    )

    def __post_init__(self) -> None:
        try:
            self.guard = GuardRules(**_as_dict(self.guard, "guard")).model_dump()
        except Exception as exc:  # noqa: BLE001 - pydantic or JSON: one message
            raise _pydantic_error(exc, "guard") from None
        try:
            self.rewards = check_weights(_as_dict(self.rewards, "rewards") or None)
        except ValueError as exc:
            raise ValueError(f"rewards: {exc}") from None
        try:
            self.judge = JudgeSettings(**_as_dict(self.judge, "judge")).model_dump()
        except Exception as exc:  # noqa: BLE001 - pydantic or JSON: one message
            raise _pydantic_error(exc, "judge") from None
        if self.rewards.get("judge") and not (self.judge["base_url"] and self.judge["model"]):
            raise ValueError(
                "rewards.judge has a weight but judge.base_url / judge.model are unset: point judge at an "
                "OpenAI-compatible endpoint (judge: {base_url: http://HOST:PORT/v1, model: NAME}) or drop judge "
                "from rewards"
            )
        if self.num_generations is None or self.num_generations < 2:
            raise ValueError(
                f"num_generations={self.num_generations}: the advantage is relative to the group, so a "
                "task needs at least 2 episodes a step; set num_generations: 2 or more"
            )
        if self.temperature <= 0:
            raise ValueError(f"temperature={self.temperature}: greedy episodes are all the same; set temperature > 0")
        if self.max_seconds is not None and self.max_seconds <= 0:
            raise ValueError(f"max_seconds={self.max_seconds}: the time budget must be positive (unset = no budget)")
        for name in ("tasks_per_step", "workers", "episode_max_turns", "max_steps", "eval_seeds"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.sft_adapter and not (Path(self.sft_adapter) / "adapter_config.json").is_file():
            raise ValueError(f"sft_adapter {self.sft_adapter} is not an adapter folder (no adapter_config.json)")
        if self.use_cpu:  # fp32: bf16 autocast on a CPU moves the recomputed logprobs ~0.05 from the captured ones
            self.bf16, self.fp16 = False, False
        self.report_to = "none"  # train rl writes its metrics and TensorBoard itself (OUT/metrics.jsonl, OUT/tb)
        self.per_device_train_batch_size = self.num_generations  # TRL's check: whole groups per generation batch
        super().__post_init__()

    @property
    def guard_rules(self) -> GuardRules:
        return GuardRules(**self.guard)
