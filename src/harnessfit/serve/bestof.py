"""Best-of-n with a verifier at inference: a layer over the built-in engine.

For each request the layer samples up to ``n`` candidate replies and returns the first whose tool calls pass the
harness card's validator (no broken ``<tool_call>`` block, no call written outside one, every call to an active tool
with arguments Pi accepts, the turn ended before the length cap); when none passes, the candidate with the best
reference-free verifiable score (the mean of the ``format``, ``arguments_object``, ``schema_valid``,
``tool_active`` and ``clean_end`` rewards). A plain text reply has no call to fail, so it passes.

Candidate 1 is generated as the request asks (greedy when it gives no temperature); the others are sampled at
``temperature`` (the request's, when it asks for sampling) with seeds ``seed + k``. The chosen candidate is sent as
one reply, so streaming clients receive it after all candidates ran. ``stats`` and the optional JSONL log (one
row per request) give the valid-call rate of one sample vs n samples on the same requests.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from harnessfit.errors import UserError
from harnessfit.harness.card import load_card
from harnessfit.rewards import RewardContext, components
from harnessfit.rewards.verifiable import call_problems, parse_completion
from harnessfit.serve.engine import Engine, GenerationResult
from harnessfit.serve.protocol import template_tools

__all__ = ["VERIFIERS", "CardVerifier", "CandidateVerdict", "BestOfEngine", "summarise_log", "summary_markdown"]

VERIFIERS = ("card",)
_SCORE_COMPONENTS = ("format", "arguments_object", "schema_valid", "tool_active", "clean_end")


@dataclass(frozen=True)
class CandidateVerdict:
    """A candidate's verdict: ``passes`` (its calls are all accepted) and a reference-free score (0–1 mostly)."""

    passes: bool
    score: float
    calls: int


class CardVerifier:
    """Checks candidate replies with the harness card's validator and the verifiable reward components."""

    def __init__(self, card: Any = None) -> None:
        if card is None:
            card = load_card()
        self.card = card

    def check(self, text: str, *, truncated: bool, active_tools: list[str]) -> CandidateVerdict:
        tools = [{"type": "function", "function": {"name": n}} for n in active_tools]
        sample = parse_completion(text, [], truncated, tools=tools)
        ctx = RewardContext(card=self.card, format_error_reward=-1.0)
        known = components()
        scores = [known[name].fn(sample, ctx).value or 0.0 for name in _SCORE_COMPONENTS]
        ok = (
            not truncated
            and not sample.broken_blocks
            and not sample.loose_calls
            and all(not p for p in call_problems(self.card, sample))
        )
        return CandidateVerdict(passes=ok, score=statistics.fmean(scores), calls=len(sample.calls))


@dataclass
class _Stats:
    requests: int = 0
    first_passes: int = 0
    any_passes: int = 0
    candidates: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


class BestOfEngine:
    """An ``Engine`` whose ``generate`` picks the best of up to ``n`` candidates (see the module docstring); every
    other attribute is the wrapped engine's."""

    def __init__(
        self, engine: Engine, n: int, verifier: CardVerifier, *, temperature: float = 0.7, log_path: Path | None = None
    ) -> None:
        if n < 1:
            raise UserError("--best-of must be at least 1")
        if temperature <= 0:
            raise UserError("--best-of-temperature must be > 0: candidates after the first are sampled")
        self.engine = engine
        self.n = n
        self.verifier = verifier
        self.temperature = temperature
        self.log_path = Path(log_path) if log_path is not None else None
        self._stats = _Stats()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def stats(self) -> dict[str, Any]:
        s = self._stats
        rate = lambda k: k / s.requests if s.requests else None  # noqa: E731
        return {
            "n": self.n,
            "requests": s.requests,
            "valid_first_sample": rate(s.first_passes),
            "valid_best_of_n": rate(s.any_passes),
            "candidates_per_request": rate(s.candidates),
        }

    def generate(
        self,
        prompt_ids: list[int],
        *,
        max_new_tokens: int,
        temperature: float | None,
        top_p: float | None,
        seed: int | None,
        result: GenerationResult,
        cancel: threading.Event | None = None,
        request: Any = None,
    ) -> Iterator[str]:
        active = _active_tools(request)
        sampled_t = temperature if temperature and temperature > 0 else self.temperature
        tried: list[tuple[CandidateVerdict, GenerationResult]] = []
        chosen = None
        for k in range(self.n):
            cand = GenerationResult(prompt_tokens=result.prompt_tokens)
            t = temperature if k == 0 else sampled_t
            # the engine sets the event it is given once its iterator is done (Engine.generate's finally): each
            # candidate gets its own, which also reads as set when the request's own is (a client that hung up)
            for _ in self.engine.generate(
                prompt_ids,
                max_new_tokens=max_new_tokens,
                temperature=t,
                top_p=top_p,
                seed=None if seed is None and k == 0 else (seed or 0) + k,
                result=cand,
                cancel=_Linked(cancel),
            ):
                pass
            check = self.verifier.check(cand.text, truncated=cand.finish_reason == "length", active_tools=active)
            tried.append((check, cand))
            if check.passes:
                chosen = len(tried) - 1
                break
            if cancel is not None and cancel.is_set():
                break
        if chosen is None:
            chosen = max(range(len(tried)), key=lambda i: (tried[i][0].score, -i))
        check, cand = tried[chosen]
        if cancel is None or not cancel.is_set():  # a client that hung up is not a request answered
            self._record(tried, chosen)
        result.completion_tokens = cand.completion_tokens
        result.finish_reason = cand.finish_reason
        result.text = cand.text
        if cand.text:
            yield cand.text

    def _record(self, tried: list[tuple[CandidateVerdict, GenerationResult]], chosen: int) -> None:
        s = self._stats
        with s._lock:
            s.requests += 1
            s.first_passes += tried[0][0].passes
            s.any_passes += any(c.passes for c, _ in tried)
            s.candidates += len(tried)
            if self.log_path is not None:
                row = {
                    "n": self.n,
                    "tried": len(tried),
                    "chosen": chosen,
                    "first_passes": tried[0][0].passes,
                    "any_passes": any(c.passes for c, _ in tried),
                    "scores": [round(c.score, 4) for c, _ in tried],
                    "calls": [c.calls for c, _ in tried],
                    "passes": [c.passes for c, _ in tried],
                }
                with self.log_path.open("ab") as fh:
                    fh.write(orjson.dumps(row) + b"\n")


class _Linked(threading.Event):
    """An event of its own that also reads as set when ``outer`` is."""

    def __init__(self, outer: threading.Event | None) -> None:
        super().__init__()
        self.outer = outer

    def is_set(self) -> bool:
        return super().is_set() or (self.outer is not None and self.outer.is_set())


def _active_tools(request: Any) -> list[str]:
    if request is None:
        return []
    tools = template_tools(request) or []
    return [str((t.get("function") or {}).get("name")) for t in tools]


def summarise_log(path: Path) -> dict[str, Any]:
    """Valid-call rate of one sample vs n samples from a best-of log (one row per request).

    ``valid_*``: the reply passes the verifier (a text reply has no call to fail); ``tool_call_*``: the reply makes
    at least one call and every call passes — the held-out "valid-call rate" of ``train.heldout``."""
    rows = [orjson.loads(line) for line in Path(path).read_bytes().splitlines() if line.strip()]
    n = rows[0]["n"] if rows else None
    k = len(rows)

    def share(hits: int) -> float | None:
        return hits / k if k else None

    def called(r: dict[str, Any], i: int) -> bool:
        return bool(r["calls"][i]) and bool(r.get("passes", [r["first_passes"]] * r["tried"])[i])

    return {
        "n": n,
        "requests": k,
        "valid_first_sample": share(sum(r["first_passes"] for r in rows)),
        "valid_best_of_n": share(sum(r["any_passes"] for r in rows)),
        "tool_call_first_sample": share(sum(called(r, 0) for r in rows)),
        "tool_call_best_of_n": share(sum(called(r, r["chosen"]) for r in rows)),
        "candidates_per_request": share(sum(r["tried"] for r in rows)),
    }


def summary_markdown(summary: dict[str, Any]) -> str:
    """The best-of section of an eval's ``results.md``: valid-call rate of one sample vs n on the same requests."""

    def pct(x: float | None) -> str:
        return "–" if x is None else f"{100 * x:.1f} %"

    per = summary.get("candidates_per_request")
    return (
        "\n## Best-of-N at serving (verifier: harness card)\n\n"
        "Every model request of the run was answered by `harnessfit serve --best-of "
        f"{summary.get('n')} --verifier card`: candidate 1 as asked, the others sampled until one passed.\n\n"
        "| model requests | passes the verifier, 1 sample | best of N | a valid tool call, 1 sample | "
        "best of N | candidates per request |\n|---|---|---|---|---|---|\n"
        f"| {summary.get('requests')} | {pct(summary.get('valid_first_sample'))} | "
        f"{pct(summary.get('valid_best_of_n'))} | {pct(summary.get('tool_call_first_sample'))} | "
        f"{pct(summary.get('tool_call_best_of_n'))} | {'–' if per is None else f'{per:.2f}'} |\n\n"
        "A text reply passes the verifier (it has no call to fail); the tool-call columns count replies that "
        "make at least one call, every call valid.\n"
    )
