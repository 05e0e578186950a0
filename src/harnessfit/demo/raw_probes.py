"""The demo's static measures beside the agent eval: both raw suites and the probe set, for base and tuned.

Each model is served once (``harnessfit.serve.start_server``, the training tokenizer, one thread) and answers the raw
suites and the probes through that one endpoint; the two models run side by side. Caps are short and samples few so
the step adds minutes, not an hour, on 2 CPU cores. The blinded pairwise review runs only when a judge is given.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

__all__ = ["run_raw_and_probes", "report_section"]


def run_raw_and_probes(
    model: str,
    out: Path,
    *,
    adapter: str | None,
    tokenizer: Path | None,
    raw_suites: list[Path],
    probes_dir: Path,
    raw_prompts: int | None,
    raw_max_tokens: int,
    probe_samples: int,
    probe_max_tokens: int,
    judge: str | None = None,
) -> dict[str, Any]:
    """Run everything into ``out/raw/<suite>/{base,tuned}`` and ``out/probe/{base,tuned}``; returns the tables."""
    # heavy: eval pulls fastapi/uvicorn (its endpoint); loaded when the demo runs the raw and probe evals
    from harnessfit.eval.episode_runner import Endpoint
    from harnessfit.eval.pairwise import run_pairwise
    from harnessfit.eval.probe import compare_probes, run_probe
    from harnessfit.eval.raw import compare_raw, load_raw_suite, run_raw
    from harnessfit.serve import start_server

    suites = [load_raw_suite(s) for s in raw_suites]
    seconds: dict[str, float] = {}

    def one(name: str, adapter_dir: str | None) -> None:
        kwargs: dict[str, Any] = {
            "max_tokens": max(raw_max_tokens, probe_max_tokens),
            "threads": 1,
            "model_id": f"{model}-{name}",
        }
        if tokenizer is not None:
            kwargs["tokenizer"] = tokenizer
        if adapter_dir:
            kwargs["adapter"] = Path(adapter_dir)
        t0 = time.monotonic()
        with start_server(model, **kwargs) as handle:
            ep = Endpoint(handle.base_url, handle.model_id, f"{model} ({name})", handle.context_window)
            for suite in suites:
                ids = [p.id for p in suite.prompts][:raw_prompts] if raw_prompts else None
                run_raw(
                    ep,
                    Path(suite.path),
                    out / "raw" / suite.name / name,
                    max_tokens=raw_max_tokens,
                    prompt_ids=ids,
                    progress=False,
                )
            run_probe(
                ep, probes_dir, out / "probe" / name, samples=probe_samples, max_tokens=probe_max_tokens, progress=False
            )
        seconds[name] = round(time.monotonic() - t0, 1)

    with ThreadPoolExecutor(2) as pool:
        for fut in [pool.submit(one, "base", None), pool.submit(one, "tuned", adapter)]:
            fut.result()
    labels = [f"{model} (base)", f"{model} (tuned)"]
    tables: dict[str, Any] = {"raw": {}, "pairwise": {}, "seconds": seconds}
    for suite in suites:
        runs = [out / "raw" / suite.name / side / "results.json" for side in ("base", "tuned")]
        tables["raw"][suite.name] = str(compare_raw(runs, out / "raw" / suite.name / "compare.md", labels))
        if judge:
            res = run_pairwise(runs[0], runs[1], judge, out / "raw" / suite.name / "pairwise", progress=False)
            tables["pairwise"][suite.name] = str(out / "raw" / suite.name / "pairwise" / "results.md")
            tables.setdefault("pairwise_outcomes", {})[suite.name] = res.aggregates["outcomes"]
    probe_runs = [out / "probe" / side / "results.json" for side in ("base", "tuned")]
    tables["probe"] = str(compare_probes(probe_runs, out / "probe" / "compare.md", labels))
    return tables


def report_section(tables: dict[str, Any]) -> list[str]:
    """The report's Markdown lines for the raw suites, the probes and (when judged) the pairwise review."""
    lines = ["## Raw suites (one completion per prompt, no tools, real compilers and linters)", ""]
    for path in tables["raw"].values():
        lines += [Path(path).read_text(encoding="utf-8").replace("# Raw suite", "### Raw suite", 1), ""]
    for name, path in tables.get("pairwise", {}).items():
        oc = tables["pairwise_outcomes"][name]
        lines += [
            f"Blinded pairwise review of `{name}` (A = base, B = tuned): stable A {oc['a']} / B {oc['b']} / "
            f"tie {oc['tie']}, order-sensitive {oc['order_sensitive']}, unparseable {oc['unparseable']} — "
            f"`{path}`",
            "",
        ]
    lines += [
        "## Probes (raw behaviour under Pi's system prompt and tools)",
        "",
        Path(tables["probe"]).read_text(encoding="utf-8").replace("# Probes", "### Probes", 1),
        "",
    ]
    return lines
