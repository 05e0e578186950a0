"""An episode's turns as the engine captured them, linked into segments by exact token prefix.

Every turn comes from the capture (``serve.capture``): the prompt ids the engine rendered, the ids it sampled and
their processed log-probabilities — never a re-tokenisation of what Pi kept. Pi sends the whole conversation again
each turn, so a turn whose prompt starts with the previous turn's prompt + completion *extends* it: both are one
sequence, trained in one forward pass, the tool results between them in context but out of the loss. A turn whose
prompt does not (the template rewrote an earlier message, a sub-agent call) starts a new segment.

A turn Pi never sent on is not rewarded (OpenEnv's ``harbor_env`` rule for abandoned branches): one the client
hung up on (``metadata.complete`` false: aborted) and one whose prompt the next turn sends again unchanged (a
retry replaced it). Its tokens get loss mask 0; its segment still holds it when a later turn extends it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CapturedTurn", "Segment", "turns_of", "link_segments", "abandoned"]


@dataclass(frozen=True)
class CapturedTurn:
    """One captured request: ``prompt`` + ``completion`` ids, a logprob per completion id, and whether it counts."""

    node_id: str
    prompt: list[int]
    completion: list[int]
    logps: list[float]
    rewarded: bool = True
    text: str = ""
    finish_reason: str | None = None


@dataclass
class Segment:
    """One training sequence: ``ids`` (prompt of its first turn, then everything after), ``mask`` 1 exactly on the
    sampled ids of rewarded turns, ``old_logps`` their captured logprobs (0.0 elsewhere), the turns it holds."""

    ids: list[int]
    mask: list[int]
    old_logps: list[float]
    prompt_len: int
    turns: list[str] = field(default_factory=list)

    @property
    def sampled(self) -> int:
        return sum(self.mask)


def abandoned(turn: dict[str, Any], following: dict[str, Any] | None) -> bool:
    """Pi never sent this turn on: it was aborted, or the next request repeats its prompt (a retry)."""
    if not (turn.get("metadata") or {}).get("complete", True):
        return True
    return following is not None and following["prompt_token_ids"] == turn["prompt_token_ids"]


def turns_of(trace: dict[str, Any]) -> list[CapturedTurn]:
    """The ``CapturedTurn``s of a ``TrainingTrace``-shaped dict (``serve.capture.training_trace``), in serving order. A turn
    whose logprobs do not match its sampled ids is a broken capture: ValueError (never trained on)."""
    raw = list(trace.get("turns") or [])
    out = []
    for i, t in enumerate(raw):
        ids, logps = list(t["completion_token_ids"]), list(t["per_token_logps"])
        if len(ids) != len(logps):
            raise ValueError(f"broken capture at {t.get('node_id')}: {len(ids)} sampled ids, {len(logps)} logprobs")
        meta = t.get("metadata") or {}
        out.append(
            CapturedTurn(
                str(t.get("node_id", i)),
                list(t["prompt_token_ids"]),
                ids,
                logps,
                rewarded=not abandoned(t, raw[i + 1] if i + 1 < len(raw) else None),
                text=str((t.get("response") or {}).get("text", "")),
                finish_reason=meta.get("finish_reason"),
            )
        )
    return out


def _start(turn: CapturedTurn) -> Segment:
    seg = Segment(
        ids=list(turn.prompt),
        mask=[0] * len(turn.prompt),
        old_logps=[0.0] * len(turn.prompt),
        prompt_len=len(turn.prompt),
    )
    _append(seg, turn, [])
    return seg


def _append(seg: Segment, turn: CapturedTurn, context: list[int]) -> None:
    seg.ids += context + turn.completion
    seg.mask += [0] * len(context) + [1 if turn.rewarded else 0] * len(turn.completion)
    seg.old_logps += [0.0] * len(context) + (turn.logps if turn.rewarded else [0.0] * len(turn.completion))
    seg.turns.append(turn.node_id)


def link_segments(turns: list[CapturedTurn]) -> list[Segment]:
    """Turns linked by exact token prefix (see the module docstring); each turn is in exactly one segment."""
    segments: list[Segment] = []
    for turn in turns:
        last = segments[-1] if segments else None
        if last is not None and len(turn.prompt) >= len(last.ids) and turn.prompt[: len(last.ids)] == last.ids:
            _append(last, turn, turn.prompt[len(last.ids) :])
        else:
            segments.append(_start(turn))
    return segments
