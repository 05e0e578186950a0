"""``run_probe``: every probe asked ``samples`` times under the harness's real system prompt and tools, each reply
read into the probe figures, written as results; ``probe_with_compare`` adds a tuned model beside its base.

The model is resolved as in ``eval agent`` (``harnessfit.eval.run.open_endpoint``): an ``Endpoint``, a URL, or a
model spec served for the run (``adapter=`` serves the tuned model).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harnessfit.convert.validate import card_wire_tools
from harnessfit.errors import UserError
from harnessfit.eval.client import ChatError, api_key_from_env, chat
from harnessfit.eval.episode_runner import Endpoint
from harnessfit.eval.probe.probes import Probe, ProbeSet, load_probes, read_reply, request_messages
from harnessfit.eval.probe.results import (
    ProbeResults,
    ProbeSample,
    aggregate_probes,
    compare_probes,
    load_probe_results,
)
from harnessfit.eval.run import open_endpoint
from harnessfit.harness.card import HarnessCard, load_card
from harnessfit.harness.versions import harness_spec, model_harness, parse_harness, recorded_harness, stage_harness

__all__ = ["run_probe", "probe_with_compare"]


def _ask(
    ep: Endpoint,
    card: HarnessCard,
    probes: ProbeSet,
    probe: Probe,
    sample: int,
    *,
    tools: Any,
    max_tokens: int,
    temperature: float,
    api_key: str | None,
) -> ProbeSample:
    """Ask one probe once (request seed ``sample``) and read the reply; an endpoint failure is an error sample."""
    try:
        reply = chat(
            ep.base_url,
            ep.model_id,
            request_messages(card, probes, probe),
            tools=tools,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=sample,
            api_key=api_key,
        )
    except ChatError as exc:
        return ProbeSample(probe_id=probe.id, sample=sample, status="error", error=f"endpoint: {exc}")
    read = read_reply(card, probe, reply)
    return ProbeSample(
        probe_id=probe.id,
        sample=sample,
        content=reply.content,
        reasoning=reply.reasoning,
        finish_reason=reply.finish_reason,
        completion_tokens=reply.completion_tokens,
        wall_seconds=reply.wall_seconds,
        **read,
    )


def run_probe(
    endpoint_or_model: Endpoint | str,
    probes_dir: Path,
    out_dir: Path,
    *,
    samples: int = 5,
    temperature: float = 0.7,
    max_tokens: int = 256,
    model_id: str | None = None,
    api_key_env: str | None = None,
    pi_version: str | None = None,
    responder: Callable | None = None,
    progress: bool = True,
    **serve_kwargs: Any,
) -> ProbeResults:
    """Ask each probe ``samples`` times (request seeds 0..samples-1); writes ``out_dir/results.{json,md}``.

    ``pi_version``: the Pi whose prompt and tools are asked. A model harnessfit trained (an adapter, a merged model)
    is probed under the Pi it was trained for by default and another is refused (``harness.versions.model_harness``);
    any other model under the newest committed card."""
    if samples < 1 or max_tokens < 1:
        raise UserError("--samples and --max-tokens must be at least 1")
    if isinstance(endpoint_or_model, str) and endpoint_or_model.startswith("scripted:") and responder is None:
        raise UserError("scripted models play agent tasks, not probes: pass a model spec or an endpoint URL")
    probes = load_probes(Path(probes_dir))
    adapter = serve_kwargs.get("adapter")
    harness = model_harness(
        harness_spec(pi_version) if pi_version else None,
        endpoint_or_model if isinstance(endpoint_or_model, str) else None,
        adapter,
        stage="probe",
    )
    card = load_card(*parse_harness(harness))
    tools = card_wire_tools(card)
    results = ProbeResults(
        model={"name": str(endpoint_or_model), "adapter": str(adapter) if adapter else None},
        probes={
            "name": probes.name,
            "path": probes.path,
            "sha256": probes.sha256,
            "cwd": probes.cwd,
            "date": probes.date,
            "items": {p.id: p.model_dump(mode="json") for p in probes.probes},
        },
        card={"id": card.id, "sha256": card.sha256},
        harness=harness,
        config={"samples": samples, "temperature": temperature, "max_tokens": max_tokens},
    )
    out_dir = Path(out_dir)
    api_key = api_key_from_env(api_key_env)
    jobs = [(p, s) for p in probes.probes for s in range(samples)]
    done: list[ProbeSample] = []
    with results.lifecycle(out_dir):  # noqa: SIM117 - two stages: the run's lifecycle, the endpoint inside it
        with open_endpoint(endpoint_or_model, [], model_id=model_id, responder=responder, **serve_kwargs) as ep:
            results.model.update(name=ep.label, model_id=ep.model_id)
            with Progress(
                TextColumn("probe {task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                disable=not progress,
                transient=True,
            ) as bar:
                tid = bar.add_task(ep.label, total=len(jobs))
                for probe, sample in jobs:
                    done.append(
                        _ask(
                            ep,
                            card,
                            probes,
                            probe,
                            sample,
                            tools=tools,
                            max_tokens=max_tokens,
                            temperature=temperature,
                            api_key=api_key,
                        )
                    )
                    bar.advance(tid)
    results.samples = done
    results.aggregates = aggregate_probes(
        done, {p.id: p.needs_tool for p in probes.probes}, {p.id: p.expect_tool for p in probes.probes}
    )
    results.finish(out_dir)
    return results


def probe_with_compare(
    model: str, probes_dir: Path, out_dir: Path, *, compare: Path, adapter: Path | None = None, **kwargs: Any
) -> tuple[ProbeResults, ProbeResults, Path]:
    """Probe ``model`` (with ``adapter``) into ``out/base``; ``compare`` is a tuned adapter (probed with the same
    base into ``out/tuned``) or earlier probe results; the side-by-side table goes to ``out/compare.md``. Both sides
    are asked under one Pi: ``pi_version`` if given, else the one the tuned adapter was trained for (or the earlier
    results were probed under); a side made for another Pi is refused before anything runs."""
    out_dir = Path(out_dir)
    compare = Path(compare)
    requested = kwargs.pop("pi_version", None)
    requested = harness_spec(requested) if requested else None
    earlier: ProbeResults | None = None
    if (compare / "adapter_config.json").is_file():
        harness = model_harness(requested, model, compare, stage="probe --compare")
    elif compare.is_file() or (compare / "results.json").is_file():
        earlier = load_probe_results(compare)
        harness = stage_harness(
            requested,
            recorded_harness({"harness": earlier.harness, "harness_card": earlier.card}),
            what=f"the probe results {compare}",
            stage="probe --compare",
            redo="probe the compared model again",
        )
    else:
        raise UserError(f"--compare {compare}: neither a LoRA adapter folder (adapter_config.json) nor probe results")
    version = parse_harness(harness)[1]
    extra = {"adapter": adapter} if adapter is not None else {}
    base = run_probe(model, probes_dir, out_dir / "base", pi_version=version, **kwargs, **extra)
    if earlier is None:
        other = run_probe(model, probes_dir, out_dir / "tuned", adapter=compare, pi_version=version, **kwargs)
        other_path = out_dir / "tuned" / "results.json"
    else:
        other, other_path = earlier, compare
    table = compare_probes(
        [out_dir / "base" / "results.json", other_path], out_dir / "compare.md", labels=[_label(base), _label(other)]
    )
    return base, other, table


def _label(res: ProbeResults) -> str:
    adapter = res.model.get("adapter")
    return f"{res.model.get('name')} + {Path(adapter).name}" if adapter else str(res.model.get("name"))
