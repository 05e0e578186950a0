"""``run_eval``: every task x seed of a suite against one model, in parallel episodes, scored and written.

The model is an ``Endpoint`` (already running), a scripted model name (``scripted:golden`` …, served here by a
``ScriptedEndpoint``), an ``http://…`` URL, or a model spec that ``harnessfit.serve.start_server`` serves for the
duration of the run. ``workers`` episodes run at once (a thread each, driving one harness subprocess).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harnessfit.core.jsonio import sha256_bytes
from harnessfit.endpoint.admission import DEFAULT_MAX_QUEUE
from harnessfit.errors import UserError
from harnessfit.eval.backends.container import run_container_episode
from harnessfit.eval.episode import UNSCORING_FLAGS, Episode, EpisodeFacts
from harnessfit.eval.episode_runner import NO_SANDBOX, Endpoint, run_episode
from harnessfit.eval.harbor import load_harbor_suite
from harnessfit.eval.images import ContainerEngine, detect_engine
from harnessfit.eval.results import EvalResults, aggregate
from harnessfit.eval.sandbox import require_sandbox
from harnessfit.eval.scorers import load_card_or_none, score_episode
from harnessfit.eval.scripted_models import Responder, responder_for
from harnessfit.eval.task import Task, load_suite
from harnessfit.harness.base import get_harness
from harnessfit.harness.scripted import ScriptedEndpoint
from harnessfit.harness.versions import harness_profile, model_harness, normalise_harness, parse_harness, stage_harness

__all__ = [
    "run_eval",
    "only_tasks",
    "default_temperature",
    "sampling_temperature",
    "served_temperature",
    "open_endpoint",
    "resolve_model_id",
    "endpoint_models",
    "endpoint_harness",
    "load_any_suite",
    "episode_line",
    "default_suite",
]


def load_any_suite(suite: Path | str) -> tuple[Path, list[Any], str]:
    """(folder, tasks, format) of a suite: ``harbor:DIR`` for Harbor task folders, else a harnessfit suite."""
    text = str(suite)
    if text.startswith("harbor:"):
        folder = Path(text.removeprefix("harbor:"))
        return folder, load_harbor_suite(folder), "harbor"
    return Path(suite), load_suite(Path(suite)), "harnessfit"


def endpoint_models(base_url: str) -> list[dict[str, Any]]:
    """The entries an OpenAI-compatible endpoint lists under ``/models`` (a server that answers but lists none, or
    nothing answering, is one line for the user)."""
    import httpx

    url = base_url.rstrip("/") + "/models"
    try:
        response = httpx.get(url, timeout=10)
    except httpx.TransportError as exc:  # nothing answers there: a model id would not help
        raise UserError(
            f"no server answers at {base_url} ({exc or type(exc).__name__}): start it (e.g. `harnessfit "
            "serve MODEL --port P`) or check the URL"
        ) from None
    try:
        data = response.raise_for_status().json()["data"]
        if not data or not all(isinstance(m, dict) and "id" in m for m in data):
            raise ValueError("no model listed")
        return list(data)
    except Exception as exc:  # noqa: BLE001 - a server that answers but lists no model: the user names it
        raise UserError(f"could not read a model id from {url} ({exc}); pass --model-id") from None


def resolve_model_id(base_url: str) -> str:
    """First model id an OpenAI-compatible endpoint lists under ``/models``."""
    return str(endpoint_models(base_url)[0]["id"])


def served_label(entry: dict[str, Any] | None, model_id: str) -> str:
    """How tables name a model at an endpoint: what ``harnessfit serve`` says it serves (the model's name, and the
    adapter's last two path parts: ``smollm2-135m + train/adapter``), else the model id (never the URL)."""
    facts = (entry or {}).get("harnessfit")
    if not isinstance(facts, dict) or not facts.get("model"):
        return str(model_id)
    label = Path(str(facts["model"])).name
    if facts.get("adapter"):
        label += " + " + "/".join(Path(str(facts["adapter"])).parts[-2:])
    return label


def endpoint_harness(base_url: str, model_id: str | None = None) -> str | None:
    """The harness the served model was trained for, as ``harnessfit serve`` publishes it in ``/v1/models`` (the
    entry's ``harnessfit.harness``); None when the endpoint does not say (another server, a base model)."""
    models = endpoint_models(base_url)
    entry = next((m for m in models if m.get("id") == model_id), models[0]) if model_id else models[0]
    facts = entry.get("harnessfit")
    return facts.get("harness") if isinstance(facts, dict) and isinstance(facts.get("harness"), str) else None


@contextlib.contextmanager
def open_endpoint(
    model: Endpoint | str,
    tasks: Sequence[Task],
    *,
    model_id: str | None = None,
    responder: Responder | None = None,
    **serve_kwargs: Any,
) -> Iterator[Endpoint]:
    """An endpoint for ``model`` that lives as long as the ``with`` block (see the module docstring)."""
    if isinstance(model, Endpoint):
        yield model
        return
    if responder is not None or model.startswith("scripted:"):
        resp = responder or responder_for(model, tasks)
        name = model if model.startswith("scripted:") else f"scripted:{model}"
        with ScriptedEndpoint(resp, model_id=name.replace(":", "-")) as ep:
            yield Endpoint(ep.base_url, ep.model_id, name)
        return
    if model.startswith(("http://", "https://")):
        base = model.rstrip("/")
        models = endpoint_models(base)
        entry = next((m for m in models if m.get("id") == model_id), None) if model_id else models[0]
        yield Endpoint(base, model_id or str(models[0]["id"]), served_label(entry, model_id or models[0]["id"]))
        return
    try:
        # caught below: an install without serve gets the --endpoint advice instead of a traceback
        from harnessfit.serve import start_server
    except ImportError as exc:
        raise UserError(
            "serving a model needs harnessfit.serve.start_server, which this install lacks; "
            "start `harnessfit serve` yourself and pass --endpoint URL"
        ) from exc
    handle = start_server(model, **serve_kwargs)
    try:
        yield Endpoint(handle.base_url, handle.model_id, model, handle.context_window)
    finally:
        handle.stop()


def _suite_info(suite_dir: Path, tasks: Sequence[Task], fmt: str) -> dict[str, Any]:
    digest = sha256_bytes("\n".join(f"{t.id}:{t.fingerprint()}" for t in tasks).encode())
    return {
        "name": suite_dir.resolve().name,
        "path": str(suite_dir),
        "format": fmt,
        "tasks": [t.id for t in tasks],
        "sha256": digest,
    }


def _load_tasks(suite: Path | str, task_ids: Sequence[str] | None) -> tuple[Path, list[Any], str]:
    """``load_any_suite``, keeping the tasks named in ``task_ids`` (all when none are named; an unknown id is a
    UserError)."""
    suite_dir, tasks, fmt = load_any_suite(suite)
    return suite_dir, only_tasks(tasks, task_ids, suite_dir), fmt


def default_temperature(seeds: int) -> float:
    """Greedy for one seed; 0.7 when several seeds should differ."""
    return 0.0 if seeds == 1 else 0.7


def sampling_temperature(seeds: int, temperature: float | None) -> float:
    """``temperature``, or ``default_temperature(seeds)`` when none is given; a UserError for several seeds at 0.
    The one seeds/temperature rule of every eval that samples a model (agent, raw, direct)."""
    temp = default_temperature(seeds) if temperature is None else temperature
    if seeds > 1 and temp == 0:
        raise UserError("several --seeds with --temperature 0 give the same answer each time: raise the temperature")
    return temp


def served_temperature(target: Endpoint | str, seeds: int, temperature: float | None) -> float | None:
    """The temperature the server this eval starts for ``target`` samples Pi's requests at (Pi names none):
    ``sampling_temperature`` — greedy for one seed, 0.7 for several, so a task's seeds are independent tries and not
    one greedy episode repeated. None where the eval starts no model server: an endpoint samples as it was started
    (``harnessfit serve --temperature``) and a scripted model does not sample; asking either for a temperature is a
    UserError."""
    served = isinstance(target, str) and not target.startswith(("http://", "https://", "scripted:"))
    if served:
        return sampling_temperature(seeds, temperature)
    if temperature is not None:
        raise UserError(
            "--temperature sets the server eval starts for --model; an endpoint samples as it was started "
            "(`harnessfit serve --temperature T`) and a scripted model does not sample"
        )
    return None


def only_tasks(tasks: list[Any], task_ids: Sequence[str] | None, suite_dir: Path) -> list[Any]:
    """The tasks named in ``task_ids`` (all when none are named); an unknown id is a UserError."""
    if not task_ids:
        return tasks
    unknown = sorted(set(task_ids) - {t.id for t in tasks})
    if unknown:
        raise UserError(f"unknown task id(s) {', '.join(unknown)} in {suite_dir}")
    return [t for t in tasks if t.id in set(task_ids)]


def _profile_tools(agent: Any, version: str, profile: str | None) -> tuple[str, ...] | None:
    """The tools the harness runs with under ``profile`` (its card's default tools), None without a profile."""
    if profile is None:
        return None
    profile_card = agent.card(version, profile)
    if profile_card is None:
        raise UserError(f"no {profile!r} card for {agent.name} {version}")
    return tuple(profile_card.default_tools)


def _run_jobs(
    one: Callable[[tuple[Task, int]], Episode],
    jobs: list[tuple[Task, int]],
    label: str,
    *,
    workers: int,
    progress: bool,
    on_episode: Callable[[Episode], None] | None,
) -> list[Episode]:
    """``one`` over every (task, seed) job, ``workers`` at once, in job order, with a progress bar."""
    episodes: list[Episode] = []
    with Progress(
        TextColumn("eval {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=not progress,
        transient=True,
    ) as bar:
        tid = bar.add_task(label, total=len(jobs))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for ep in pool.map(one, jobs):
                episodes.append(ep)
                bar.advance(tid)
                if on_episode is not None:
                    on_episode(ep)
    return episodes


def _eval_config(
    *,
    seeds: int,
    workers: int,
    max_turns: int | None,
    max_seconds: float | None,
    max_output_bytes: int | None,
    sandbox: bool,
    spec: str,
    tools: tuple[str, ...] | None,
    env: str | None = None,
    temperature: float | None = None,
) -> dict[str, Any]:
    """The results' ``config``: the run's settings (for Harbor suites, where tasks ran: ``env``), and the harness
    and its tools when a profile chose them."""
    config: dict[str, Any] = {
        "seeds": seeds,
        "temperature": temperature,
        "workers": workers,
        "max_turns": max_turns,
        "max_seconds": max_seconds,
        "max_output_bytes": max_output_bytes,
        "sandbox_requested": sandbox,
    }
    if env is not None:
        config["env"] = env
    if tools is not None:  # the same tools as the data built with this profile's card
        config["harness"] = spec
        config["tools"] = list(tools)
    return config


def _admit_every_worker(endpoint_or_model: Endpoint | str, workers: int, serve_kwargs: dict[str, Any]) -> None:
    """A server this eval starts admits every worker at once: the harness does not retry a 429 under the eval's
    settings (Pi's)."""
    if isinstance(endpoint_or_model, str) and not endpoint_or_model.startswith(("http://", "https://", "scripted:")):
        serve_kwargs.setdefault("max_queue", max(DEFAULT_MAX_QUEUE, workers))


def _episode(
    job: tuple[Task, int],
    *,
    endpoint: Endpoint,
    out_dir: Path,
    card: Any,
    spec: str,
    engine: ContainerEngine | None,
    sandbox: bool,
    **run_kwargs: Any,
) -> Episode:
    """Run and score one (task, seed) job: in the task's container when a container ``engine`` runs Harbor tasks,
    else sandboxed on the host."""
    task, seed = job
    if engine is None:
        facts = run_episode(task, seed, endpoint, out_dir, harness=spec, sandbox=sandbox, **run_kwargs)
    else:
        facts = run_container_episode(task, seed, endpoint, out_dir, harness=spec, engine=engine, **run_kwargs)
    return _score(facts, task, out_dir, card, spec)


def run_eval(
    endpoint_or_model: Endpoint | str,
    suite_dir: Path | str,
    out_dir: Path,
    *,
    seeds: int = 1,
    workers: int = 1,
    max_turns: int | None = None,
    max_seconds: float | None = None,
    max_output_bytes: int | None = None,
    sandbox: bool = True,
    harness: str | None = None,
    model_id: str | None = None,
    responder: Responder | None = None,
    task_ids: Sequence[str] | None = None,
    progress: bool = True,
    on_episode: Callable[[Episode], None] | None = None,
    env: str = "host",
    temperature: float | None = None,
    **serve_kwargs: Any,
) -> EvalResults:
    """Run the suite ``seeds`` times against the model; writes ``out_dir/results.{json,md}`` (``status: started``
    first, then ``success`` or ``error`` with the reason) and episode folders.

    ``suite_dir``: a harnessfit suite folder or ``harbor:DIR`` (``eval/harbor.py``; ``env`` says where its tasks run:
    ``_container_engine``). ``sandbox=True`` (the default): a missing or broken bubblewrap is a UserError first.
    ``harness``: ``name@VERSION[+PROFILE]`` (``pi@1.6.0``; a profile runs that card profile's tools and scores
    against that card). A model harnessfit trained runs in the harness it was trained for by default, and another
    is refused (``harness.versions.stage_harness``); any other model runs in the default harness.
    ``temperature``: of the server started for a model spec (``served_temperature``: default greedy for one seed,
    0.7 for several); recorded in the results' ``config`` (null where an endpoint or a scripted model answers).
    """
    if seeds < 1 or workers < 1:
        raise UserError("--seeds and --workers must be at least 1")
    temp = served_temperature(endpoint_or_model, seeds, temperature) if responder is None else None
    if temp is not None:
        serve_kwargs["temperature"] = temp
    out_dir = Path(out_dir)
    suite_dir, tasks, fmt = _load_tasks(suite_dir, task_ids)
    spec = _eval_harness(harness, endpoint_or_model, serve_kwargs.get("adapter"), model_id)
    agent, version, profile = get_harness(spec), parse_harness(spec)[1], harness_profile(spec)
    agent.binary(version)  # a clear error now rather than one error per episode
    status = require_sandbox() if sandbox else NO_SANDBOX  # fail closed: never unsandboxed unless asked
    engine = _container_engine(env) if fmt == "harbor" else None
    tools = _profile_tools(agent, version, profile)
    config = _eval_config(
        seeds=seeds,
        workers=workers,
        max_turns=max_turns,
        max_seconds=max_seconds,
        max_output_bytes=max_output_bytes,
        sandbox=sandbox,
        spec=spec,
        tools=tools,
        env=(engine.name if engine is not None else "host") if fmt == "harbor" else None,
        temperature=temp,
    )
    results = EvalResults(
        model={"name": str(endpoint_or_model)},
        suite=_suite_info(suite_dir, tasks, fmt),
        config=config,
        sandbox=status,
        pi_version=version,
        harness=spec,
    )
    card = load_card_or_none(version, profile, harness=spec)  # scored against the card of the version that ran
    _admit_every_worker(endpoint_or_model, workers, serve_kwargs)
    with (
        results.lifecycle(out_dir),
        open_endpoint(endpoint_or_model, tasks, model_id=model_id, responder=responder, **serve_kwargs) as endpoint,
    ):
        results.model = {"name": endpoint.label, "model_id": endpoint.model_id, "endpoint": endpoint.base_url}
        one = functools.partial(
            _episode,
            endpoint=endpoint,
            out_dir=out_dir,
            card=card,
            spec=spec,
            sandbox=sandbox,
            tools=tools,
            max_turns=max_turns,
            max_seconds=max_seconds,
            max_output_bytes=max_output_bytes,
            expose_solution=str(endpoint_or_model) == "scripted:oracle",
            engine=engine,
        )  # the oracle sees /solution
        episodes = _run_jobs(
            one,
            [(t, s) for t in tasks for s in range(seeds)],
            endpoint.label,
            workers=workers,
            progress=progress,
            on_episode=on_episode,
        )
    results.episodes = sorted(episodes, key=lambda e: (e.facts.task_id, e.facts.seed))
    results.aggregates = aggregate(results.episodes, seeds)
    results.finish(out_dir)
    return results


def _container_engine(env: str) -> ContainerEngine | None:
    """The container engine a Harbor suite runs on for ``env``: ``host`` (None: bubblewrap stands in for the task's
    image), ``podman`` or ``docker`` (``eval/backends/container.py``), ``auto`` (podman, then docker, else the
    host)."""
    if env == "host":
        return None
    if env not in ("auto", "podman", "docker"):
        raise UserError(f"--env must be host, podman, docker or auto (got {env!r})")
    try:
        return detect_engine(None if env == "auto" else env)
    except UserError:
        if env == "auto":
            return None
        raise


def default_suite() -> Path:
    """``examples/tasks/default``: in the working folder when it has one, else in the source checkout this package
    runs from (an editable install), so ``eval agent`` without ``--suite`` works from any folder."""
    here = Path("examples/tasks/default")
    if here.is_dir():
        return here
    repo = Path(__file__).resolve().parents[3] / "examples" / "tasks" / "default"
    if repo.is_dir():
        return repo
    raise UserError(
        "no default task suite here (examples/tasks/default of the harnessfit repository): pass --suite DIR"
    )


def episode_line(ep: Episode, label: str = "eval") -> str:
    """One line per finished episode (what ``eval agent`` and ``synth`` print as they go): task and seed, the
    outcome (complete loop, or the failure / why it is unscored), turns and seconds."""
    f, m = ep.facts, ep.metrics
    if m is None:
        outcome = f"unscored ({f.status}: {(f.error or '').splitlines()[0][:120] if f.error else 'no detail'})"
        return f"{label}: {f.task_id} seed {f.seed}: {outcome}, {f.wall_seconds:.0f} s"
    if m.integrity_flag in UNSCORING_FLAGS:
        outcome = f"unscored (integrity: {m.integrity_flag})"
    else:
        outcome = "complete loop" if m.complete_loop else f"failed ({m.failure or 'no complete loop'})"
    return (
        f"{label}: {f.task_id} seed {f.seed}: {outcome}, {m.turns} turn(s), {m.tool_calls_valid}/"
        f"{m.tool_calls_total} valid calls, {f.wall_seconds:.0f} s"
    )


def _eval_harness(asked: str | None, model: Endpoint | str, adapter: Any, model_id: str | None = None) -> str:
    """The harness spec the episodes run in: what was asked, else what the model was trained for — for an endpoint,
    what its ``/v1/models`` says (``endpoint_harness``); where it says nothing, the default, said once."""
    asked = normalise_harness(asked) if asked else None
    if isinstance(model, str) and model.startswith(("http://", "https://")):
        recorded = endpoint_harness(model, model_id)
        spec = stage_harness(asked, recorded, what=f"the model served at {model}", stage="eval agent", redo="retrain")
        if recorded is None and asked is None:
            from rich.console import Console

            Console(stderr=True).print(
                f"eval: the endpoint does not say which harness its model was trained for: "
                f"running {spec} (pass --harness to choose another)",
                markup=False,
                soft_wrap=True,
            )
    else:
        spec = model_harness(asked, model if isinstance(model, str) else None, adapter, stage="eval agent")
    return spec


def _score(facts: EpisodeFacts, task: Task, out_dir: Path, card: Any, harness: str) -> Episode:
    if facts.status != "success":
        return Episode(facts=facts)
    try:
        return Episode(facts=facts, metrics=score_episode(facts, task, out_dir, card, harness))
    except Exception as exc:  # noqa: BLE001 - a scorer crash makes the episode unscored, not failed
        facts.status, facts.error = "error", f"scorer failed: {type(exc).__name__}: {exc}"
        return Episode(facts=facts)
