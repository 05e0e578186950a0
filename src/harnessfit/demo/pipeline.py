"""The whole pipeline on the embedded model, on CPU: the README's main job (``harnessfit demo``).

capture (real Pi) → generate tasks (an instance of every *training* task family, and of every held-out family) →
synth (golden solver through real Pi on the training tasks) + real traces → build → audit → short SFT → serve
base and tuned → eval both on the *default* suite and on the held-out families (neither trained on) → raw suites and
probes for both (plus a blinded pairwise review when a judge is given) → one Markdown report and the HTML report.

Each step calls the stage's public function and keeps its artifacts under ``out/<stage>``; the demo adds nothing a
stage does not already do, it only chains them and writes ``out/report.md``, ``out/steps.json`` (seconds per
step) and ``out/report/index.html``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from rich.console import Console
from rich.markup import escape

from harnessfit.dataset.config import config_from_values
from harnessfit.demo.raw_probes import report_section, run_raw_and_probes
from harnessfit.errors import UserError
from harnessfit.harness.card import card_path
from harnessfit.harness.pi import DEFAULT_PI_VERSION, install_pi
from harnessfit.harness.versions import harness_spec
from harnessfit.tokens import audit

if TYPE_CHECKING:
    from harnessfit.train.config import HarnessfitSFTConfig

__all__ = ["DemoPlan", "run_demo", "demo_recipe", "examples_dir"]


def examples_dir() -> Path:
    """The repository's ``examples/`` (suites, recipes): beside ``src/`` in a checkout, else in the working dir."""
    here = Path(__file__).resolve().parents[3] / "examples"
    if here.is_dir():
        return here
    cwd = Path.cwd() / "examples"
    if cwd.is_dir():
        return cwd
    raise UserError("examples/ not found: run `harnessfit demo` from the harnessfit checkout")


def _default_traces() -> Path | None:
    shared = Path(__file__).resolve().parents[4] / "shared" / "traces"
    return shared if shared.is_dir() else None


@dataclass
class DemoPlan:
    """What the demo runs; the defaults keep it under ~15 minutes on 2 CPU cores."""

    out: Path = Path("out/demo")
    model: str = "smollm2-135m"
    traces: Path | None = field(default_factory=_default_traces)
    train_suite: Path | None = None  # None: generated from the training task families (harnessfit.tasks)
    eval_suite: Path | None = None
    heldout_suite: Path | None = None  # None: generated from the held-out families when train_suite is generated
    family_instances: int = 1  # instances per training family (the demo's slice; the bench takes more)
    family_per_kind: int | None = None  # instead: instances per kind, spread over its families (tasks.generate)
    heldout_instances: int = 1  # instances per held-out family
    family_seed: int = 0
    recipe: Path | None = None
    epochs: float | None = None  # None: the recipe's num_train_epochs
    seeds: int = 1
    eval_max_turns: int | None = 3  # None: each task's own limits
    eval_max_seconds: float | None = 60.0
    eval_workers: int = 1  # 1: base and tuned side by side, one episode each; N: one model at a time, N episodes
    serve_max_tokens: int = 80
    synth_seeds: int = 1
    # contrast sessions (the first call double-encoded, Pi's refusal, then the whole solution): since a refused call
    # stays in the context (``ConversationMeta.context_only``) their recoveries are SFT labels, about as many tokens
    # again as the golden sessions; the demo leaves them out to stay within its 15 minutes, the bench takes them
    contrast: bool = False
    # retry sessions (a failed first edit kept as context only, a re-read, then the exact edit): off in the demo for
    # its budget
    retry: bool = False
    # second-try sessions (a wrong first change kept as context only, the failing check, a re-read, the repair):
    # off in the demo for its budget
    second_try: bool = False
    # raw suites and probes (harnessfit.demo.raw_probes): short caps and one sample keep them to a few minutes
    raw_suites: list[Path] | None = None
    probes: Path | None = None
    raw_prompts: int | None = 6  # the first N prompts of each suite (None: all); 6 of 10 keep `make demo` under 15 min
    raw_max_tokens: int = 48
    probe_samples: int = 1
    probe_max_tokens: int = 48
    judge: str | None = None  # an OpenAI-compatible judge URL: adds the blinded pairwise review
    static: bool = True  # raw suites and probes (no tools); the training-effect bench leaves them out

    def resolved(self) -> DemoPlan:
        ex = examples_dir()
        self.train_suite = Path(self.train_suite) if self.train_suite else None
        self.heldout_suite = Path(self.heldout_suite) if self.heldout_suite else None
        self.eval_suite = Path(self.eval_suite or ex / "tasks" / "default")
        self.recipe = Path(self.recipe or ex / "recipes" / "smollm2-cpu-demo.yaml")
        default_raw = sorted(p.parent for p in (ex / "raw").glob("*/suite.yaml"))
        self.raw_suites = [Path(s) for s in self.raw_suites or default_raw]
        self.probes = Path(self.probes or ex / "probes" / "default")
        if self.traces is not None and not Path(self.traces).exists():
            raise UserError(f"traces folder not found: {self.traces} (pass --no-traces to use synthesised data only)")
        return self


class _Steps:
    """Runs named steps, times them, and prints one line per step."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.seconds: dict[str, float] = {}

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        self.console.rule(f"[bold]{name}")
        t0 = time.monotonic()
        result = fn()
        self.seconds[name] = round(time.monotonic() - t0, 1)
        self.console.print(f"[green]✓[/] {name} in {self.seconds[name]:.1f} s")
        return result


def demo_recipe(plan: DemoPlan, audit_dir: Path) -> HarnessfitSFTConfig:
    """The SFT config the demo trains with: ``plan.recipe`` on the audit at ``audit_dir``, with ``plan.epochs``
    passes when given (the bench varies them without a recipe file of its own)."""
    from harnessfit.train import load_sft_config  # heavy (torch, trl): loaded when the demo trains

    overrides: dict[str, Any] = {"audit_dir": str(audit_dir), "model": plan.model}
    if plan.epochs is not None:
        overrides["num_train_epochs"] = plan.epochs
    return load_sft_config(plan.recipe, **overrides)


def run_demo(plan: DemoPlan, console: Console | None = None) -> Path:
    """Run every stage; returns the path of ``report.md``."""
    # heavy: eval, report, synth and the card capture pull fastapi/uvicorn, train torch/trl, the dataset build
    # datasketch/scipy; loaded when the demo runs
    from harnessfit.dataset.build import build_dataset
    from harnessfit.eval import run_eval
    from harnessfit.harness.pi.capture import capture_pi
    from harnessfit.report import compare
    from harnessfit.report.build import build_report
    from harnessfit.report.sections.run import STEPS_FILE
    from harnessfit.synth import synth
    from harnessfit.train import train_sft

    console = console or Console()
    plan = plan.resolved()
    out = Path(plan.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    steps = _Steps(console)
    facts: dict[str, Any] = {"plan": {k: str(v) for k, v in vars(plan).items()}}

    steps.run("install Pi", lambda: install_pi(DEFAULT_PI_VERSION))

    def _capture() -> dict[str, Any]:
        card = capture_pi(
            DEFAULT_PI_VERSION, progress=lambda m: console.print(f"[dim]  {escape(m)}[/]", highlight=False)
        )
        data = card.to_json_bytes()
        (out / "harness").mkdir(exist_ok=True)
        (out / "harness" / f"{card.id}.json").write_bytes(data)
        committed = card_path("pi", DEFAULT_PI_VERSION).read_bytes()
        return {
            "harness": harness_spec(card.version, card.harness),
            "id": card.id,
            "sha256": card.sha256,
            "tools": card.default_tools,
            "equals_committed": data == committed,
        }

    facts["card"] = steps.run("capture the harness card from the real Pi CLI", _capture)
    if not facts["card"]["equals_committed"]:
        console.print(
            "[yellow]the captured card differs from the committed one; "
            "`harnessfit harness capture pi` prints the diff[/]"
        )

    facts["tasks"] = steps.run("generate tasks (training and held-out families)", lambda: _tasks(plan, out))
    facts["synth"] = steps.run(
        "synthesise training sessions (golden solver through real Pi, training suite)",
        lambda: synth(
            plan.train_suite,
            out / "synth",
            seeds=plan.synth_seeds,
            workers=2,
            contrast=plan.contrast,
            retry=plan.retry,
            second_try=plan.second_try,
        ),
    )

    def _build() -> dict[str, Any]:
        inputs = [str(out / "synth" / "sessions")] + ([str(plan.traces)] if plan.traces else [])
        config = config_from_values(inputs=inputs, out=str(out / "dataset"), workers=1)
        report = build_dataset(config, Path.cwd(), out=out / "dataset", progress=True)
        m = report.manifest
        return {
            "counts": m["counts"],
            "splits": m["splits"]["per_split"],
            "redaction": m["redaction"]["replaced"],
            "seconds": report.seconds,
        }

    facts["build"] = steps.run("build the dataset (convert, redact, dedup, split, export)", _build)

    def _audit() -> dict[str, Any]:
        rep = audit(out / "dataset", plan.model, out / "audit")
        return rep.model_dump(mode="json")

    facts["audit"] = steps.run("audit tokens with the real tokenizer and template", _audit)

    def _train() -> dict[str, Any]:
        recipe = demo_recipe(plan, out / "audit")
        res = train_sft(recipe, out / "train")
        return res.model_dump(mode="json")

    facts["train"] = steps.run("fine-tune (LoRA SFT, CPU demo recipe)", _train)
    adapter = facts["train"].get("adapter_dir")
    if not adapter:
        raise UserError(f"training ended without an adapter ({facts['train'].get('stop_reason')})")

    def _eval_one(name: str, adapter_dir: str | None, suite: Path, tag: str) -> Path:
        kwargs: dict[str, Any] = {
            "max_tokens": plan.serve_max_tokens,
            "threads": 1,
            "tokenizer": out / "audit" / "tokenizer",
        }
        if adapter_dir:
            kwargs["adapter"] = Path(adapter_dir)
        run_eval(
            plan.model,
            suite,
            out / "eval" / f"{name}{tag}",
            seeds=plan.seeds,
            workers=plan.eval_workers,
            max_turns=plan.eval_max_turns,
            max_seconds=plan.eval_max_seconds,
            progress=False,
            model_id=f"{plan.model}-{name}",
            **kwargs,
        )
        return out / "eval" / f"{name}{tag}" / "results.json"

    def _evals(suite: Path, tag: str) -> list[Path]:
        models = (("base", None), ("tuned", adapter))
        if plan.eval_workers > 1:  # one model after the other with every worker: a slow model is not left alone
            return [_eval_one(name, path, suite, tag) for name, path in models]
        with ThreadPoolExecutor(2) as pool:  # on one core each, side by side
            return [f.result() for f in [pool.submit(_eval_one, name, path, suite, tag) for name, path in models]]

    results = steps.run(
        "serve base and tuned, evaluate both in the real Pi (default suite)", lambda: _evals(plan.eval_suite, "")
    )
    table = steps.run("compare", lambda: compare(results, out / "eval" / "before_after.md"))
    heldout_table = None
    if plan.heldout_suite is not None:
        held = steps.run("evaluate both on the held-out task families", lambda: _evals(plan.heldout_suite, "-heldout"))
        heldout_table = compare(
            held, out / "eval" / "heldout_before_after.md", title="Before / after on held-out task families"
        )
    facts["static"] = (
        None
        if not plan.static
        else steps.run(
            "raw suites and probes, base and tuned (no tools)",
            lambda: run_raw_and_probes(
                plan.model,
                out,
                adapter=adapter,
                tokenizer=out / "audit" / "tokenizer",
                raw_suites=plan.raw_suites,
                probes_dir=plan.probes,
                raw_prompts=plan.raw_prompts,
                raw_max_tokens=plan.raw_max_tokens,
                probe_samples=plan.probe_samples,
                probe_max_tokens=plan.probe_max_tokens,
                judge=plan.judge,
            ),
        )
    )
    facts["seconds"] = steps.seconds
    (out / STEPS_FILE).write_bytes(orjson.dumps({"steps": steps.seconds}, option=orjson.OPT_INDENT_2) + b"\n")
    report = _write_report(out, facts, Path(table), heldout_table)
    # every number of the report as JSON (bench/training_effect.py reads it)
    (out / "facts.json").write_bytes(orjson.dumps(facts, default=str, option=orjson.OPT_INDENT_2))
    html = steps.run(
        "HTML report (episodes with Pi's own session export)",
        lambda: build_report(out, out / "report", progress=True).index,
    )
    console.print(f"\n[bold green]report:[/] {escape(str(report))}\n[bold green]HTML report:[/] {escape(str(html))}")
    return report


def _tasks(plan: DemoPlan, out: Path) -> dict[str, Any]:
    """Generate the training (and held-out) family instances unless the plan names a training suite."""
    # heavy: the task families pull eval (fastapi/uvicorn); loaded when the demo generates tasks
    from harnessfit.tasks import families_in
    from harnessfit.tasks.generate import generate_tasks, per_kind_counts

    if plan.train_suite is not None:
        return {"generated": False, "train_suite": str(plan.train_suite)}
    plan.train_suite = out / "tasks" / "train"
    fams = families_in("train")
    n = per_kind_counts(fams, plan.family_per_kind) if plan.family_per_kind else plan.family_instances
    train = generate_tasks(fams, plan.train_suite, n=n, seed=plan.family_seed, force=True)
    facts: dict[str, Any] = {
        "generated": True,
        "train_suite": str(plan.train_suite),
        "train_families": len(train["families"]),
        "train_tasks": len(train["tasks"]),
    }
    if plan.heldout_suite is None:
        plan.heldout_suite = out / "tasks" / "heldout"
        held = generate_tasks(
            families_in("heldout"), plan.heldout_suite, n=plan.heldout_instances, seed=plan.family_seed + 1, force=True
        )
        facts.update(
            heldout_suite=str(plan.heldout_suite),
            heldout_families=len(held["families"]),
            heldout_tasks=len(held["tasks"]),
        )
    return facts


def _fmt(x: Any, nd: int = 4) -> str:
    return "n/a" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


def _chain_lines(aud: dict[str, Any]) -> list[str]:
    lay = aud.get("layouts_total")
    if not lay or not lay.get("record_tokens"):
        return []
    breaks = ", ".join(f"{k} {v['count']}" for k, v in aud.get("breaks", {}).items() if v["count"]) or "none"
    return [
        f"- trainable actions (within cap {aud['cap_applied']}): {lay['actions']} — {lay['record_tokens']:,} tokens "
        f"as per-action records, {lay['chain_tokens']:,} as {lay['chains']} chains "
        f"({lay['chain_to_record_ratio']:.1%}); chain breaks: {breaks}"
    ]


def _training_data_lines(data: dict[str, Any] | None) -> list[str]:
    """What the demo trained on and how much of it the short run saw (from the train stage's result)."""
    if not data:
        return []
    rate = data.get("supervised_tokens_per_second")
    lines = [
        f"- trained on {data['train_actions']} actions in {data['train_rows']} {data['layout']} "
        f"({data['tokens_per_epoch']:,} tokens per epoch, {data['supervised_tokens_per_epoch']:,} supervised; "
        f"{data['train_skipped']} actions skipped"
        + "".join(
            f" ({', '.join(f'{n} {r}' for r, n in why.items())})"
            for why in [data.get("train_skipped_by_reason")]
            if why
        )
        + ", see `train/skipped.jsonl`)",
        f"- {data['actions_seen']} of {data['train_actions']} training actions were seen at least once"
        + (" — every one" if data["every_action_seen"] else " — not all of them")
        + "; "
        f"{data['supervised_tokens_seen']:,} supervised tokens in {_fmt(data.get('train_seconds'), 1)} s"
        + (f" ({rate:,.1f} per second)" if rate else ""),
    ]
    if data.get("eval_note"):
        lines.append(f"- held-out loss: {data['eval_note']}")
    return lines


def _suite_lines(tasks: dict[str, Any]) -> list[str]:
    if not tasks.get("generated"):
        return [f"Training data: sessions the golden solver recorded through the real Pi on `{tasks['train_suite']}`"]
    held = (
        f"; held out: {tasks['heldout_tasks']} instances of {tasks['heldout_families']} other families "
        "(`harnessfit tasks list`), never trained on"
        if tasks.get("heldout_families")
        else ""
    )
    return [
        f"Training data: sessions the golden solver recorded through the real Pi on {tasks['train_tasks']} "
        f"generated tasks of {tasks['train_families']} training task families{held}"
    ]


def _write_report(out: Path, facts: dict[str, Any], table_md: Path, heldout_md: Path | None = None) -> Path:
    card, build, aud, train = facts["card"], facts["build"], facts["audit"], facts["train"]
    counts = build["counts"]
    reasons = ", ".join(f"{k} {v}" for k, v in counts["rejected_by_reason"].items()) or "none"
    sources = ", ".join(f"{k} {v}" for k, v in counts["kept_by_source"].items())
    splits = " · ".join(
        f"{name}: {row['conversations']} conversations, {row['sft']} actions" for name, row in build["splits"].items()
    )
    violations = sum(v["count"] for v in aud["violations"].values())
    tot = aud["total"]
    lines = [
        "# harnessfit demo report",
        "",
        "The whole pipeline on the embedded model (SmolLM2-135M-Instruct) on CPU.",
        *_suite_lines(facts["tasks"]),
        "plus the real traces; the demo recipe trains on the Pi-format records among them. Evaluation: the *default*",
        "suite (`examples/tasks/default`), whose tasks the model never saw, in the real Pi CLI.",
        "",
        f"The HTML report, with curves and a page per eval episode: `{out / 'report' / 'index.html'}` "
        f"(`harnessfit view {out}` serves it).",
        "",
        "## Harness",
        f"- target `{card['harness']}` (the default: the newest committed card; every stage below recorded it), "
        f"card `{card['id']}` (sha256 `{card['sha256'][:16]}…`), tools: {', '.join(card['tools'])}",
        f"- re-captured from the real Pi CLI; equals the committed card: **{card['equals_committed']}**",
        "",
        "## Dataset",
        "",
        "| stage | count |",
        "|---|---|",
        f"| trajectories read | {counts['read']} |",
        f"| converted to Pi conversations | {counts['converted']} |",
        f"| rejected at conversion | {counts['rejected_convert']} |",
        f"| duplicates dropped (exact / near) | {counts['duplicate_exact']} / {counts['duplicate_near']} |",
        f"| kept | {counts['kept']} ({sources}) |",
        f"| redactions | {', '.join(f'{k} {v}' for k, v in build['redaction'].items()) or 'none'} |",
        f"| ledger rows by reason | {reasons} |",
        "",
        f"Splits (grouped by root request): {splits}. Dataset card: `{out / 'dataset' / 'README.md'}`.",
        "",
        "## Token audit (real tokenizer, training template)",
        "",
        f"- template `{aud['template']['name']}`; records {aud['records_read']} read, {aud['records_clean']} clean; "
        f"mask violations: {violations}",
        f"- tokens: {tot['prompt_tokens']:,} prompt, {tot['supervised_tokens']:,} supervised; record length "
        f"min {aud['lengths']['min']:,.0f} / median {aud['lengths']['median']:,.0f} / max {aud['lengths']['max']:,.0f}",
        *_chain_lines(aud),
        f"- recommended cap {aud['recommended_cap']}: {aud['recommendation_reason']}",
        f"- details: `{out / 'audit' / 'audit.md'}`",
        "",
        "## Training",
        f"- status {train['status']}, {train['global_step']} optimizer steps",
        *_training_data_lines(train.get("data")),
        f"- validation loss: before {_fmt(train.get('initial_val_loss'))} → final {_fmt(train.get('final_val_loss'))}"
        f" (best {_fmt(train.get('best_val_loss'))} at step {train.get('best_step')})",
        f"- report and curves: `{train.get('report_path')}`",
        "",
        "## In the real harness: before / after",
        "",
        table_md.read_text(encoding="utf-8").replace("# Before / after", "### Before / after", 1),
        "",
        *(
            [heldout_md.read_text(encoding="utf-8").replace("# Before / after", "### Before / after", 1), ""]
            if heldout_md
            else []
        ),
        *(report_section(facts["static"]) if facts["static"] else []),
        "## Time per step (seconds)",
        "",
        "| step | seconds |",
        "|---|---|",
        *[f"| {k} | {v} |" for k, v in facts["seconds"].items()],
        f"| **total** | {round(sum(facts['seconds'].values()), 1)} |",
        "",
    ]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
