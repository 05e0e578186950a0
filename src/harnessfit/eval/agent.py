"""``eval agent``: one model (served here, scripted, or at a running endpoint) through a task suite in the real
harness, with best-of-N's valid-call summary when the model is served best-of-N; and the lines the command prints."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harnessfit.errors import UserError
from harnessfit.eval.episode import Episode
from harnessfit.eval.results import EvalResults, harness_label, write_results
from harnessfit.eval.run import default_suite, run_eval
from harnessfit.serve.bestof import summarise_log, summary_markdown

__all__ = ["agent_eval", "summary_lines"]


def agent_eval(
    model: str | None,
    endpoint: str | None,
    *,
    suite: Path | None,
    out: Path,
    seeds: int,
    workers: int,
    max_turns: int | None,
    max_seconds: float | None,
    max_output_bytes: int | None,
    task_ids: Sequence[str] | None,
    sandbox: bool,
    model_id: str | None,
    adapter: Path | None,
    max_tokens: int | None,
    best_of: int,
    harness: str | None,
    env: str = "auto",
    on_episode: Callable[[Episode], None] | None,
    temperature: float | None = None,
) -> tuple[EvalResults, dict[str, Any] | None]:
    """Run ``eval agent`` (exactly one of ``model`` and ``endpoint``); returns the results and, with ``best_of`` > 1,
    the best-of-N summary (also in ``out/bestof.json`` and the results), else None."""
    if (model is None) == (endpoint is None):
        raise UserError("give exactly one of --model SPEC or --endpoint URL")
    extra: dict = {"adapter": adapter} if adapter is not None else {}
    if max_tokens is not None:
        extra["max_tokens"] = max_tokens
    if best_of > 1:
        if model is None or model.startswith("scripted:"):
            raise UserError("--best-of serves --model itself: give --model SPEC (not --endpoint or a scripted model)")
        log = out / "bestof.jsonl"
        out.mkdir(parents=True, exist_ok=True)
        log.unlink(missing_ok=True)
        extra.update(best_of=best_of, best_of_log=log.resolve())
    target: Any = model or endpoint
    results = run_eval(
        target,
        suite or default_suite(),
        out,
        seeds=seeds,
        workers=workers,
        max_turns=max_turns,
        max_seconds=max_seconds,
        max_output_bytes=max_output_bytes,
        sandbox=sandbox,
        model_id=model_id,
        task_ids=task_ids,
        harness=harness,
        env=env,
        on_episode=on_episode,
        temperature=temperature,
        **extra,
    )
    if best_of > 1 and (out / "bestof.jsonl").is_file() and (out / "bestof.jsonl").stat().st_size:
        return results, _add_best_of(results, out)
    return results, None


def _add_best_of(results: EvalResults, out: Path) -> dict[str, Any]:
    """Summarise the best-of-N log into ``bestof.json``, the results' aggregates and ``results.md``."""
    import orjson

    summary = summarise_log(out / "bestof.jsonl")
    (out / "bestof.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    results.aggregates["best_of"] = summary  # results.json and results.md carry it too
    write_results(results, out)
    with (out / "results.md").open("a", encoding="utf-8") as fh:
        fh.write(summary_markdown(summary))
    return summary


def summary_lines(results: EvalResults, out: Path, best_of: int, best: dict[str, Any] | None) -> list[str]:
    """What ``eval agent`` prints when it is done: the complete-loop rate, failures, the best-of-N valid-call rates,
    the unscored episodes, the integrity flags, and where the results are."""
    agg = results.aggregates
    loop = agg["rates"]["complete_loop"]
    lines = [
        f"{results.model['name']} in {harness_label(results)}: complete loop {loop['successes']}/{loop['n']} "
        f"(unscored {agg['unscored']}); sandbox {results.sandbox}"
    ]
    if agg.get("failures"):
        lines.append("failures: " + ", ".join(f"{k} {v}" for k, v in agg["failures"].items()))
    if best is not None:

        def pct(x: float | None) -> str:
            return "–" if x is None else f"{100 * x:.1f} %"

        lines.append(
            f"valid-call rate over {best['requests']} model requests: one sample "
            f"{pct(best['valid_first_sample'])}, best of {best_of} {pct(best['valid_best_of_n'])} "
            f"(replies with a valid tool call: {pct(best['tool_call_first_sample'])} → "
            f"{pct(best['tool_call_best_of_n'])}; {best['candidates_per_request']:.2f} candidates per "
            f"request); {out / 'bestof.json'}"
        )
    if agg.get("unscored_by_status"):
        lines.append("unscored: " + ", ".join(f"{k} {v}" for k, v in agg["unscored_by_status"].items()))
    if agg.get("integrity_flags"):
        lines.append(
            "checker and expected change disagree: " + ", ".join(f"{k} {v}" for k, v in agg["integrity_flags"].items())
        )
    lines.append(f"wrote {out / 'results.json'} and {out / 'results.md'}")
    return lines
