"""``run_pairwise``: two raw results on the same frozen suite, judged blind in both orders, plus a standalone rubric.

Answers are paired by prompt and seed. A pair where either side has no completion is listed under ``missing`` and
not judged. The judge is any OpenAI-compatible endpoint (a served local model, vLLM, a hosted API whose key is read
from the environment variable the caller names); it is asked at temperature 0 by default.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harnessfit.errors import UserError
from harnessfit.eval.client import ChatError, api_key_from_env, chat
from harnessfit.eval.pairwise.judge import (
    pairwise_messages,
    parse_score,
    parse_verdict,
    prompt_versions,
    rubric_messages,
)
from harnessfit.eval.pairwise.results import (
    JudgeCall,
    Pair,
    PairwiseResults,
    RubricScore,
    aggregate_pairwise,
    outcome_of,
)
from harnessfit.eval.raw.results import RawAnswer, RawResults, load_raw_results
from harnessfit.eval.run import resolve_model_id

__all__ = ["run_pairwise"]

_WINNER = {("ab", "1"): "a", ("ab", "2"): "b", ("ba", "1"): "b", ("ba", "2"): "a"}


def _answers(res: RawResults) -> dict[tuple[str, int], RawAnswer]:
    return {(a.prompt_id, a.seed): a for a in res.answers if a.completion is not None}


def _load_pair(results_a: Path, results_b: Path) -> tuple[RawResults, RawResults]:
    """Both raw results: each finished successfully, on the same frozen suite."""
    res_a, res_b = load_raw_results(Path(results_a)), load_raw_results(Path(results_b))
    for path, res in ((results_a, res_a), (results_b, res_b)):
        if res.status != "success":
            raise UserError(f"{path}: the raw run did not finish successfully (status {res.status})")
    if res_a.suite.get("sha256") != res_b.suite.get("sha256"):
        raise UserError(
            "the two results answered different suites (their sha256 differ): pairwise review needs "
            "the same frozen prompts"
        )
    return res_a, res_b


@dataclass(frozen=True)
class _Judge:
    """The judge endpoint and how it is asked."""

    base: str
    model_id: str
    api_key: str | None
    max_tokens: int
    temperature: float

    @classmethod
    def at(
        cls, judge_url: str, judge_model: str | None, api_key_env: str | None, *, max_tokens: int, temperature: float
    ) -> _Judge:
        base = judge_url.rstrip("/")
        api_key = api_key_from_env(api_key_env)
        if api_key_env and api_key is None:
            raise UserError(f"--judge-key-env {api_key_env}: that environment variable is not set")
        try:
            model_id = judge_model or resolve_model_id(base)
        except UserError as exc:
            raise UserError(str(exc).replace("pass --model-id", "pass --judge-model")) from None
        return cls(base, model_id, api_key, max_tokens, temperature)

    def ask(self, messages: list[dict[str, str]]) -> tuple[str | None, str | None]:
        """(the judge's text, None) or (None, the error)."""
        try:
            return chat(
                self.base,
                self.model_id,
                messages,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                api_key=self.api_key,
            ).content, None
        except ChatError as exc:
            return None, str(exc)


def _messages(
    job: tuple[str, Any],
    prompts: dict[str, str],
    ans_a: dict[tuple[str, int], RawAnswer],
    ans_b: dict[tuple[str, int], RawAnswer],
) -> list[dict[str, str]]:
    """The judge's messages for one job: a pair in order ``ab`` or ``ba``, or one side's answer for the rubric."""
    kind, key = job
    request = prompts.get(key[0], "")
    if kind == "ab":
        return pairwise_messages(request, ans_a[key].completion.text, ans_b[key].completion.text)
    if kind == "ba":
        return pairwise_messages(request, ans_b[key].completion.text, ans_a[key].completion.text)
    side = ans_a if kind == "rubric-a" else ans_b
    return rubric_messages(request, side[key].completion.text)


def _record(
    results: PairwiseResults, done: list[tuple[str, Any, str | None, str | None]], both: list[tuple[str, int]]
) -> None:
    """The judge's answers into ``results``: each pair's two calls and outcome, and the rubric scores."""
    calls: dict[tuple[str, int], list[JudgeCall]] = {k: [] for k in both}
    for kind, key, raw, error in done:
        if kind in ("ab", "ba"):
            verdict = parse_verdict(raw) if raw is not None else None
            winner = "tie" if verdict == "tie" else _WINNER.get((kind, verdict or ""))
            calls[key].append(JudgeCall(order=kind, raw=raw, verdict=verdict, winner=winner, error=error))
        else:
            results.rubric.append(
                RubricScore(
                    side=kind[-1],
                    prompt_id=key[0],
                    seed=key[1],
                    raw=raw,
                    error=error,
                    score=parse_score(raw) if raw is not None else None,
                )
            )
    results.pairs = [
        Pair(prompt_id=k[0], seed=k[1], calls=sorted(c, key=lambda x: x.order), outcome=outcome_of(c))
        for k, c in calls.items()
    ]


def run_pairwise(
    results_a: Path,
    results_b: Path,
    judge_url: str,
    out_dir: Path,
    *,
    judge_model: str | None = None,
    api_key_env: str | None = None,
    rubric: bool = True,
    temperature: float = 0.0,
    max_tokens: int = 512,
    workers: int = 1,
    progress: bool = True,
) -> PairwiseResults:
    """Judge every pair twice (A first, then B first) and, with ``rubric``, every answer once; write the results."""
    if workers < 1 or max_tokens < 1:
        raise UserError("--workers and --judge-max-tokens must be at least 1")
    res_a, res_b = _load_pair(results_a, results_b)
    judge = _Judge.at(judge_url, judge_model, api_key_env, max_tokens=max_tokens, temperature=temperature)
    prompts: dict[str, str] = res_a.suite["prompts"]
    ans_a, ans_b = _answers(res_a), _answers(res_b)
    keys = sorted(set(ans_a) | set(ans_b))
    both = [k for k in keys if k in ans_a and k in ans_b]
    missing = [{"prompt_id": k[0], "seed": k[1], "side": "b" if k in ans_a else "a"} for k in keys if k not in both]
    out_dir = Path(out_dir)
    results = PairwiseResults(
        judge={
            "base_url": judge.base,
            "model_id": judge.model_id,
            "api_key_env": api_key_env,
            "temperature": temperature,
            "max_tokens": max_tokens,
        },
        questions=prompt_versions(),
        inputs={
            side: {"path": str(p), "model": r.model.get("name"), "model_id": r.model.get("model_id")}
            for side, p, r in (("a", results_a, res_a), ("b", results_b, res_b))
        },
        suite={"name": res_a.suite.get("name"), "sha256": res_a.suite.get("sha256")},
        missing=missing,
    )
    jobs: list[tuple[str, Any]] = [("ab", k) for k in both] + [("ba", k) for k in both]
    if rubric:
        jobs += [("rubric-a", k) for k in sorted(ans_a)] + [("rubric-b", k) for k in sorted(ans_b)]

    def one(job: tuple[str, Any]) -> tuple[str, Any, str | None, str | None]:
        raw, error = judge.ask(_messages(job, prompts, ans_a, ans_b))
        bar.advance(tid)
        return job[0], job[1], raw, error

    with (
        results.lifecycle(out_dir),
        Progress(
            TextColumn("judge {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            disable=not progress,
            transient=True,
        ) as bar,
    ):
        tid = bar.add_task(judge.model_id, total=len(jobs))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(one, jobs))
    _record(results, done, both)
    results.aggregates = aggregate_pairwise(results.pairs, results.rubric, len(missing))
    results.finish(out_dir)
    return results
