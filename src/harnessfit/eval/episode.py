"""What one episode (one task x one seed) left behind, as the runner observed it, and the metrics scored from it.

``EpisodeFacts`` holds only what the runner saw from outside (exit code, why it killed Pi, the checker's exit
code, whether the expected change holds, wall time) plus the paths of the event stream and the session file.
``EpisodeMetrics`` is computed from those files by the scorers alone, so a results file can be re-scored later.
``status == "error"`` means the harness or runner failed: the episode is unscored and kept out of every rate;
``status == "needs_container"`` means the task's environment (a container image, a Dockerfile that installs
things) is one this machine cannot provide: it was not run, and is also kept out of every rate (never passed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

__all__ = [
    "EpisodeFacts",
    "EpisodeMetrics",
    "Episode",
    "Score",
    "VerifierOutput",
    "FAILURES",
    "FAILURE_RULES",
    "INTEGRITY_FLAGS",
    "UNSCORING_FLAGS",
]

# What went wrong, most specific first: ``EpisodeMetrics.failure`` of an episode that is no complete loop is the first
# whose test holds (a test of the runner's facts ``f`` and the episode's metric values ``m``; none: checker_failed).
FAILURE_RULES: tuple[tuple[str, Callable[[EpisodeFacts, Mapping[str, Any]], bool]], ...] = (
    # a sized tmpfs (workspace, /tmp, HOME, /dev/shm, Pi's session folder) filled up
    ("cap_disk", lambda f, m: f.cap_hit == "cap_disk"),
    ("cap_fsize", lambda f, m: f.cap_hit == "cap_fsize"),  # a file reached the file size cap (RLIMIT_FSIZE)
    ("cap_pids", lambda f, m: f.cap_hit == "cap_pids"),  # the processes and threads reached their cap (RLIMIT_NPROC)
    ("cap_cpu", lambda f, m: f.cap_hit == "cap_cpu"),  # the CPU seconds of the whole process tree reached their cap
    ("cap_memory", lambda f, m: f.cap_hit == "cap_memory"),  # the resident memory of the process tree reached its cap
    ("runaway", lambda f, m: m["runaway"]),  # output capture cap hit: the model streamed without end
    ("timeout", lambda f, m: m["timed_out"]),  # wall-clock cap hit
    ("endpoint_error", lambda f, m: m["endpoint_error"]),  # the last model request failed (Pi json mode exits 0)
    ("turn_cap", lambda f, m: f.turn_cap_hit),  # the turn cap aborted the agent: it never stopped calling tools
    # tool arguments sent as a JSON string of the object; Pi rejects them
    ("double_encoded_arguments", lambda f, m: m["double_encoded_arguments"] > 0),
    ("invalid_tool_calls", lambda f, m: m["tool_calls_invalid"] > 0),  # other calls the card or Pi rejected
    ("no_final_response", lambda f, m: not m["finished_with_response"]),  # stopped without a final text answer
    ("checker_failed", lambda f, m: not m["checker_passed"]),  # the independent checker did not pass
    # the checker passed but the task's expected change is not in the workspace
    ("expected_change_missing", lambda f, m: not m["expected_change"]),
)
FAILURES = tuple(name for name, _ in FAILURE_RULES)

# Episodes where the checker and the expected change disagree; shown to the reader (neither is a complete loop).
INTEGRITY_FLAGS = (
    "checker_passed_without_expected_change",  # the checker may have been fooled (or the predicate is too strict)
    "expected_change_without_checker_pass",  # the change is there but the independent check failed
    "session_file_differs_from_events",  # the session file (agent-writable) was changed: the episode is unscored
)
# flags that take an episode out of the rates (its numbers cannot be trusted), counted as unscored ("integrity")
UNSCORING_FLAGS = ("session_file_differs_from_events",)


class VerifierOutput(BaseModel):
    """What a Harbor task's verifier (``tests/test.sh``) left: its exit code, the tails of what it printed, and the
    reward files it wrote in ``/logs/verifier`` (name -> text, clipped), with the reason when no reward was read."""

    exit_code: int | None = None  # None when the runner stopped it (the problem says why)
    stdout: str = ""
    stderr: str = ""
    reward_files: dict[str, str] = Field(default_factory=dict)
    problem: str | None = None


class EpisodeFacts(BaseModel):
    """Runner observations; paths are relative to the run's output folder."""

    task_id: str
    seed: int
    status: Literal["success", "error", "needs_container"] = "success"
    error: str | None = None
    sandbox: str
    # exactly what the sandbox allowed ({"agent": …, "checker": …}, see SandboxSpec.describe); None unsandboxed
    sandbox_policy: dict[str, Any] | None = None
    pi_exit_code: int | None = None
    killed: Literal["output_cap", "wall_clock"] | None = None
    # the cap the runner saw reached (it stopped the sandbox there), and what it saw: "/tmp full (67108864 bytes)"
    cap_hit: Literal["cap_disk", "cap_fsize", "cap_pids", "cap_cpu", "cap_memory"] | None = None
    cap_detail: str | None = None
    pruned: list[str] = Field(default_factory=list)  # left out of the run folder: large files, entries not copied
    turn_cap_hit: bool = False
    max_turns: int
    wall_seconds: float = 0.0
    output_bytes: int = 0
    expected_change: bool | None = None
    checker_exit_code: int | None = None
    checker_output: str = ""
    reward: float | None = None  # Harbor tasks: the verifier's reward (reward.json as Harbor picks it, else reward.txt)
    rewards: dict[str, float] | None = None  # Harbor tasks: every named reward the verifier wrote
    # Harbor tasks: the backend that ran the episode ("host": bubblewrap on this machine stood in for the image; a
    # container backend names itself), the image the task's environment names (its Dockerfile's FROM, or its
    # docker_image), and the verifier's own output
    backend: str | None = None
    image: str | None = None
    verifier: VerifierOutput | None = None
    events_file: str
    stderr_file: str
    session_file: str | None = None


class Score(BaseModel):
    """A registered metric's result for one episode beyond the built-in ones: its value, or why it has none."""

    value: Any = None
    unscored: str | None = None


class EpisodeMetrics(BaseModel):
    """Per-episode metrics, read from the session file, the event stream and the checker result."""

    complete_loop: bool
    expected_change: bool
    validation_used: bool
    final_validation_clean: bool = False  # results written before this metric existed read as False
    finished_with_response: bool
    checker_passed: bool
    tool_calls_total: int
    tool_calls_valid: int
    tool_calls_invalid: int
    invalid_by_reason: dict[str, int] = Field(default_factory=dict)
    pi_tool_errors: dict[str, int] = Field(default_factory=dict)  # valid calls whose execution failed, by tool
    repaired_by_reason: dict[str, int] = Field(default_factory=dict)  # card warnings: Pi repaired the call and ran it
    double_encoded_arguments: int
    repeated_failed_call: bool = False  # results written before this metric existed read as False
    runaway: bool
    timed_out: bool
    turn_cap_hit: bool
    endpoint_error: bool
    turns: int
    tokens_input: int
    tokens_output: int
    tokens_total: int
    wall_seconds: float
    stop_reason: str | None
    failure: str | None
    integrity_flag: str | None = None  # one of INTEGRITY_FLAGS when checker and expected change disagree
    integrity_detail: str | None = None  # where the session file and the event stream disagree
    # metrics registered beyond the fields above (eval/scoring.py), by name; left out of the JSON when there are none
    scores: dict[str, Score] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _without_empty_scores(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if not self.scores:
            data.pop("scores", None)
        return data


class Episode(BaseModel):
    """One scored episode as stored in results.json; ``metrics`` is None when unscored (status error)."""

    facts: EpisodeFacts
    metrics: EpisodeMetrics | None = None
