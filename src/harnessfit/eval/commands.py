"""CLI commands of the eval stage (thin: parse options, call the stage's public functions, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from harnessfit.errors import UserError
from harnessfit.eval.agent import agent_eval, summary_lines
from harnessfit.eval.compare import compare
from harnessfit.eval.direct import run_direct
from harnessfit.eval.pairwise import commands as pairwise_cmds
from harnessfit.eval.probe import commands as probe_cmds
from harnessfit.eval.raw import commands as raw_cmds
from harnessfit.eval.rescore import rate_changes, rescore
from harnessfit.eval.run import default_suite, episode_line

__all__ = ["register"]

eval_app = typer.Typer(help="Evaluate models inside the real harness (Pi) on task suites.", no_args_is_help=True)

_HARNESS_HELP = (
    "Harness to run, as pi@VERSION (an installed version: `harnessfit harness install pi --version V`); "
    "pi@VERSION+tools runs it with its optional grep/find/ls tools (the tools profile's card)."
)


@eval_app.command("agent")
def agent(
    model: str = typer.Option(
        None,
        "--model",
        help="Model spec to serve (path, HF id) or scripted:golden|"
        "scripted:double-encode|scripted:runaway|scripted:never-stop|scripted:recovering|"
        "scripted:oracle.",
    ),
    endpoint: str = typer.Option(
        None,
        "--endpoint",
        help="Running OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (instead of --model).",
    ),
    model_id: str = typer.Option(None, "--model-id", help="Model id at --endpoint (default: the first it lists)."),
    suite: Path = typer.Option(
        None,
        "--suite",
        help="Task suite folder (<task>/task.yaml), or harbor:DIR for Harbor "
        "task folders (instruction.md, task.toml, tests/test.sh). Default: the repository's "
        "examples/tasks/default (found from any working folder).",
    ),
    seeds: int = typer.Option(1, "--seeds", help="Runs per task (pass@k / pass^k use them)."),
    temperature: float = typer.Option(
        None,
        "--temperature",
        min=0.0,
        max=2.0,
        help="Sampling temperature of the server started for --model (default: 0 for one seed, 0.7 for several, "
        "so seeds are independent tries); an --endpoint samples as it was started.",
    ),
    workers: int = typer.Option(1, "--workers", help="Episodes run in parallel."),
    out: Path = typer.Option(Path("runs/eval"), "--out", help="Output folder (results.json, results.md, episodes/)."),
    max_turns: int = typer.Option(None, "--max-turns", help="Override every task's turn cap."),
    max_seconds: float = typer.Option(None, "--max-seconds", help="Override every task's wall-clock cap."),
    max_output_bytes: int = typer.Option(
        None,
        "--max-output-bytes",
        help="Override the output capture cap (default 50 MiB; hitting it counts as runaway).",
    ),
    task: list[str] = typer.Option(None, "--task", help="Only these task ids (repeatable)."),
    no_sandbox: bool = typer.Option(
        False,
        "--no-sandbox",
        help="Run the harness without bubblewrap (results say so); "
        "without this flag a missing or broken bubblewrap stops the eval.",
    ),
    adapter: Path = typer.Option(None, "--adapter", help="LoRA adapter folder for --model (served by harnessfit)."),
    max_tokens: int = typer.Option(
        None,
        "--max-tokens",
        help="Output cap of the server harnessfit starts for --model (default: the server's, 512).",
    ),
    best_of: int = typer.Option(
        1,
        "--best-of",
        help="Serve --model with best-of-N verified by the harness card "
        "(`harnessfit serve --best-of N --verifier card`); reports the valid-call rate of "
        "one sample vs N on the same requests.",
    ),
    harness: str = typer.Option(
        None,
        "--harness",
        help=_HARNESS_HELP + " Default: the one a harnessfit-trained "
        "model (--adapter, a merged model) was trained for, else the newest committed card.",
    ),
    env: str = typer.Option(
        "auto",
        "--env",
        help="Harbor suites: where a task runs: podman or docker (its image, "
        "Pi inside), host (bubblewrap stands in for the image), auto (podman, then docker, else "
        "host).",
    ),
) -> None:
    """Run every task x seed through the real harness CLI (Pi) against one model; write results JSON + Markdown."""
    results, best = agent_eval(
        model,
        endpoint,
        suite=suite,
        out=out,
        seeds=seeds,
        workers=workers,
        max_turns=max_turns,
        max_seconds=max_seconds,
        max_output_bytes=max_output_bytes,
        task_ids=task or None,
        sandbox=not no_sandbox,
        model_id=model_id,
        adapter=adapter,
        max_tokens=max_tokens,
        best_of=best_of,
        harness=harness,
        env=env,
        on_episode=lambda ep: typer.echo(episode_line(ep), err=True),
        temperature=temperature,
    )
    for line in summary_lines(results, out, best_of, best):
        typer.echo(line)


@eval_app.command("compare")
def compare_cmd(
    results: list[Path] = typer.Argument(..., help="Two or more results.json files (or their folders)."),
    out: Path = typer.Option(Path("runs/compare.md"), "--out", help="Markdown file to write (+ .json beside it)."),
) -> None:
    """Side-by-side before/after table of two or more eval results."""
    path = compare(results, out)
    typer.echo(path.read_text(encoding="utf-8"))


@eval_app.command("rescore")
def rescore_cmd(
    run: Path = typer.Argument(..., help="A finished eval agent run: its folder or its results.json."),
    suite: Path = typer.Option(None, "--suite", help="The suite it ran (default: the path its results name)."),
) -> None:
    """Score a finished run's episodes again with the current scorers; rewrite its results and say what changed."""
    before, after = rescore(run, suite)
    changes = rate_changes(before, after)
    typer.echo("\n".join(changes) if changes else "no aggregate changed")


@eval_app.command("direct")
def direct_cmd(
    model: str = typer.Option(None, "--model", help="Model spec to serve (embedded alias, local folder, HF id)."),
    endpoint: str = typer.Option(None, "--endpoint", help="Running OpenAI-compatible endpoint (instead of --model)."),
    suite: Path = typer.Option(
        None, "--suite", help="Task suite folder (<task>/task.yaml). Default: examples/tasks/default."
    ),
    seeds: int = typer.Option(1, "--seeds", help="Answers per task."),
    temperature: float = typer.Option(
        None, "--temperature", help="Sampling temperature (default: 0 for one seed, 0.7 for several)."
    ),
    max_tokens: int = typer.Option(512, "--max-tokens", help="Output cap per answer."),
    task: list[str] = typer.Option(None, "--task", help="Only these task ids (repeatable)."),
    adapter: Path = typer.Option(None, "--adapter", help="LoRA adapter folder for --model (served by harnessfit)."),
    no_sandbox: bool = typer.Option(False, "--no-sandbox", help="Run the checkers without bubblewrap."),
    out: Path = typer.Option(Path("runs/direct"), "--out", help="Output folder (results.json, results.md, answers/)."),
) -> None:
    """Answer each task in one reply without the harness (its prompt and files given, the new files asked for);
    the task's own checker judges the folder. Can the model write the change at all?"""
    if (model is None) == (endpoint is None):
        raise UserError("give exactly one of --model SPEC or --endpoint URL")
    extra: dict[str, Any] = {"adapter": adapter} if adapter is not None else {}
    res = run_direct(
        model or endpoint,
        suite or default_suite(),
        out,
        seeds=seeds,
        temperature=temperature,
        max_tokens=max_tokens,
        task_ids=task or None,
        sandbox=not no_sandbox,
        **extra,
    )
    cells = ", ".join(f"{k.replace('_', ' ')} {v['successes']}/{v['n']}" for k, v in res.aggregates["rates"].items())
    typer.echo(f"{res.model['name']} on {res.suite['name']}: {cells} (unscored {res.aggregates['unscored']})")
    typer.echo(f"wrote {out / 'results.json'} and {out / 'results.md'}")


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    raw_cmds.register(eval_app)
    pairwise_cmds.register(eval_app)
    probe_cmds.register(app)
    app.add_typer(eval_app, name="eval")
