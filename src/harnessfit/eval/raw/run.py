"""``run_raw``: every prompt x seed of a raw suite answered once without tools, the code extracted, then checked.

The model is resolved as in ``eval agent`` (``harnessfit.eval.run.open_endpoint``): a running ``Endpoint``, an
``http(s)://…/v1`` URL, or a model spec (with ``adapter=``/``tokenizer=``…) served for the duration of the run.
Completions are requested first (``workers`` at a time), then all answers are checked in one batch per checker.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harnessfit.errors import UserError
from harnessfit.eval.client import ChatError, api_key_from_env, chat
from harnessfit.eval.episode_runner import Endpoint
from harnessfit.eval.raw.checkers import CodeChecks, checker_for
from harnessfit.eval.raw.extract import EXTRACTION_RULE_VERSION, extract
from harnessfit.eval.raw.results import Completion, RawAnswer, RawResults, aggregate_raw
from harnessfit.eval.raw.suite import RawPrompt, load_raw_suite
from harnessfit.eval.raw.toolchain import ruff_binary, svelte_toolchain
from harnessfit.eval.run import open_endpoint, sampling_temperature

__all__ = ["run_raw", "check_answers"]


def _ask(
    endpoint: Endpoint, suite, prompt: RawPrompt, seed: int, *, max_tokens: int, temperature: float, api_key: str | None
) -> RawAnswer:
    try:
        reply = chat(
            endpoint.base_url,
            endpoint.model_id,
            suite.messages(prompt),
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            api_key=api_key,
        )
    except ChatError as exc:
        return RawAnswer(prompt_id=prompt.id, seed=seed, status="error", error=f"endpoint: {exc}")
    return RawAnswer(
        prompt_id=prompt.id,
        seed=seed,
        completion=Completion(
            text=reply.content,
            reasoning=reply.reasoning,
            finish_reason=reply.finish_reason,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            wall_seconds=reply.wall_seconds,
        ),
    )


def check_answers(answers: list[RawAnswer], language: str) -> dict[str, Any]:
    """Extract and check every answer that has a completion (in place); returns the checker's description."""
    checker = checker_for(language)
    todo = [a for a in answers if a.status == "success" and a.completion is not None]
    extractions = [extract(a.completion.text, checker.tags) for a in todo]
    checks = checker.check([e.code for e in extractions])
    for answer, ex, result in zip(todo, extractions, checks, strict=True):
        answer.code, answer.code_source, answer.shape = ex.code, ex.source, ex.shape
        if isinstance(result, CodeChecks):
            answer.compile, answer.policy, answer.compiles = result.compile, result.policy, result.compiles
            answer.fully_clean = ex.shape.clean and result.compile.clean and result.policy.clean
        else:
            answer.status, answer.error = "error", f"checker: {result}"
    return checker.describe()


def _only_prompts(prompts: list[RawPrompt], prompt_ids: list[str] | None, suite_dir: Path) -> list[RawPrompt]:
    """The suite's prompts named in ``prompt_ids`` (all when none are named); an unknown id is a UserError."""
    if not prompt_ids:
        return prompts
    unknown = sorted(set(prompt_ids) - {p.id for p in prompts})
    if unknown:
        raise UserError(f"unknown prompt id(s) {', '.join(unknown)} in {suite_dir}")
    return [p for p in prompts if p.id in set(prompt_ids)]


def run_raw(
    endpoint_or_model: Endpoint | str,
    suite_dir: Path,
    out_dir: Path,
    *,
    seeds: int = 1,
    temperature: float | None = None,
    max_tokens: int = 512,
    workers: int = 1,
    model_id: str | None = None,
    api_key_env: str | None = None,
    prompt_ids: list[str] | None = None,
    responder: Callable | None = None,
    progress: bool = True,
    **serve_kwargs: Any,
) -> RawResults:
    """Answer, extract, check and count; writes ``out_dir/results.{json,md}`` (``started`` first, then the end)."""
    if seeds < 1 or workers < 1 or max_tokens < 1:
        raise UserError("--seeds, --workers and --max-tokens must be at least 1")
    if isinstance(endpoint_or_model, str) and endpoint_or_model.startswith("scripted:") and responder is None:
        raise UserError("scripted models play agent tasks, not raw prompts: pass a model spec or --endpoint URL")
    suite = load_raw_suite(Path(suite_dir))
    prompts = _only_prompts(suite.prompts, prompt_ids, suite_dir)
    # the checkers' toolchains first: a missing one is a clear error before any model is served
    if suite.language == "svelte":
        svelte_toolchain()
    else:
        ruff_binary()
    temp = sampling_temperature(seeds, temperature)
    config = {
        "seeds": seeds,
        "temperature": temp,
        "max_tokens": max_tokens,
        "workers": workers,
        "prompts": [p.id for p in prompts],
        "extraction_rule": EXTRACTION_RULE_VERSION,
    }
    out_dir = Path(out_dir)
    results = RawResults(model={"name": str(endpoint_or_model)}, suite=suite.info(), config=config)
    api_key = api_key_from_env(api_key_env)
    jobs = [(p, s) for p in prompts for s in range(seeds)]
    with results.lifecycle(out_dir):
        with open_endpoint(endpoint_or_model, [], model_id=model_id, responder=responder, **serve_kwargs) as endpoint:
            results.model = {"name": endpoint.label, "model_id": endpoint.model_id}
            with Progress(
                TextColumn("raw {task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                disable=not progress,
                transient=True,
            ) as bar:
                tid = bar.add_task(f"{suite.name} · {endpoint.label}", total=len(jobs))

                def one(job: tuple[RawPrompt, int]) -> RawAnswer:
                    answer = _ask(
                        endpoint, suite, job[0], job[1], max_tokens=max_tokens, temperature=temp, api_key=api_key
                    )
                    bar.advance(tid)
                    return answer

                with ThreadPoolExecutor(max_workers=workers) as pool:
                    answers = list(pool.map(one, jobs))
        results.checker = check_answers(answers, suite.language)
    results.answers = answers
    results.aggregates = aggregate_raw(answers)
    results.finish(out_dir)
    return results
