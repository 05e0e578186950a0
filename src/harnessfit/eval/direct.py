"""``run_direct``: agent tasks answered in one reply without the harness — can the model write the change at all?

A model that fails a task inside Pi fails at the loop (its calls, reading, validating, stopping) or at the change
itself. This eval takes the loop away: the model gets the task's prompt and every file of its folder in one user
message, and answers with the complete new content of each file it changes or creates. Those files are written into
a copy of the task's folder and the task's own hidden checker judges them, exactly as after an agent episode
(``eval.episode_runner.run_checker``: sandboxed, no network). Nothing runs for the model; it cannot validate.

So ``checker_passed`` here is the share of tasks whose change the model can write when handed everything an agent
would have had to read: for a base model, what it brings to a task before any training on that task's content (an
agent may still do better by running the check and trying again); for a tuned model, also a sign of what the adapter
did to plain chat. The raw suites answer another question (a frozen prompt, a toolchain check, no task folder and no
checker), so this is its own small runner.

**Reply rule** (one definition, ``files_from_reply``). Fenced blocks are found as ``eval.raw.extract`` finds them.
A block belongs to the path on the nearest non-blank line above its opening fence when that line, after removing
leading ``#`` marks, ``*``/backtick emphasis, a ``File:`` label and a trailing colon, is one word that names a path:
it holds a ``.`` or ``/`` (and does not end with ``.``), or it is a file of the folder or a path of the expected
change. When no block has such a heading and the task's expected change names exactly one path, the first block
is that file. A later block for a path already given is ignored (finding ``duplicate_path``); a heading that leaves
the folder is refused (``path_outside``). A file's text is the block's content with one final newline.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harnessfit.errors import UserError
from harnessfit.eval.client import ChatError, chat
from harnessfit.eval.episode_runner import Endpoint, run_checker
from harnessfit.eval.files import ResultsHeader, md_cell
from harnessfit.eval.raw.extract import find_blocks
from harnessfit.eval.results import fmt_rate
from harnessfit.eval.run import only_tasks, open_endpoint, sampling_temperature
from harnessfit.eval.safefs import copy_into, relative_parts
from harnessfit.eval.sandbox import require_sandbox
from harnessfit.eval.stats import rate
from harnessfit.eval.task import Task, load_suite, suite_families

__all__ = ["DIRECT_SYSTEM", "DirectAnswer", "DirectResults", "direct_messages", "files_from_reply", "run_direct"]

DIRECT_RESULTS_VERSION = 1

DIRECT_SYSTEM = (
    "You change files in a small project folder. You cannot run commands: you are shown the task and every file "
    "in the folder. Reply with the complete new content of each file you create or change, each as a line "
    "`### PATH` followed by one fenced code block holding the whole file. Files you do not give stay as they are."
)

_MAX_FILE_BYTES = 16_384  # the task folders are small; a larger file is named but not shown
_LABEL = re.compile(r"^(?:file|path)\s*:\s*", re.IGNORECASE)


def _fence(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text`` (so the file cannot close it)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _folder_files(task: Task) -> list[Path]:
    return sorted(p for p in task.workspace_dir.rglob("*") if p.is_file()) if task.workspace_dir.is_dir() else []


def direct_messages(task: Task) -> list[dict[str, str]]:
    """The system and user messages of one task: its prompt, then every file of its folder in a fenced block."""
    parts = [task.prompt.rstrip(), ""]
    files = _folder_files(task)
    if not files:
        parts.append("The folder is empty.")
    else:
        parts.append("The folder holds these files:")
    for path in files:
        rel = path.relative_to(task.workspace_dir).as_posix()
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            parts += ["", f"### {rel}", f"({len(data)} bytes, not text)"]
            continue
        if len(data) > _MAX_FILE_BYTES:
            parts += ["", f"### {rel}", f"({len(data)} bytes, too long to show)"]
            continue
        fence = _fence(text)
        parts += ["", f"### {rel}", fence, text.rstrip("\n"), fence]
    return [{"role": "system", "content": DIRECT_SYSTEM}, {"role": "user", "content": "\n".join(parts)}]


def _heading_path(line: str, known: set[str]) -> str | None:
    """The path a heading line names, or None when the line is not a heading of the reply rule."""
    s = line.strip().lstrip("#").strip().strip("*").strip().strip("`").strip()
    s = _LABEL.sub("", s).rstrip(":").strip().strip("`").strip()
    if not s or any(c.isspace() for c in s) or s.endswith("."):
        return None
    return s if ("." in s or "/" in s or s in known) else None


def _inside(path: str) -> bool:
    try:
        return "\\" not in path and bool(relative_parts(path))
    except ValueError:
        return False


@dataclass
class ReplyFiles:
    """What the reply rule took from one reply: path → text, and its findings (codes, in order)."""

    files: dict[str, str] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)


def files_from_reply(text: str, expected_paths: Sequence[str], folder: Sequence[str] = ()) -> ReplyFiles:
    """Apply the reply rule (module docstring) to ``text``; ``folder``: the paths of the task's files."""
    known = {*expected_paths, *folder}
    out = ReplyFiles()
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks = find_blocks(text)
    if not blocks:
        out.findings.append("no_code_block")
        return out
    unnamed = []
    for block in blocks:
        above = next((lines[k] for k in range(block.start_line - 2, -1, -1) if lines[k].strip()), None)
        path = _heading_path(above, known) if above is not None else None
        if path is None:
            unnamed.append(block)
            continue
        if not _inside(path):
            out.findings.append("path_outside")
            continue
        path = PurePosixPath(path).as_posix()
        if path in out.files:
            out.findings.append("duplicate_path")
            continue
        out.files[path] = block.content.rstrip("\n") + "\n"
    if not out.files and unnamed and len(expected_paths) == 1:
        out.files[expected_paths[0]] = unnamed[0].content.rstrip("\n") + "\n"
        out.findings.append("unnamed_block")
    elif not out.files:
        out.findings.append("no_named_block")
    return out


class DirectAnswer(BaseModel):
    """One task x seed: the reply, the files taken from it, and the checker's verdict on the folder with them."""

    task_id: str
    family: str | None = None
    seed: int
    status: Literal["success", "error"] = "success"
    error: str | None = None
    reply: str | None = None
    finish_reason: str | None = None
    files: list[str] = Field(default_factory=list)
    findings: list[str] = Field(default_factory=list)
    expected_change: bool | None = None
    checker_exit_code: int | None = None
    checker_output: str | None = None

    @property
    def scored(self) -> bool:
        return self.status == "success" and self.checker_exit_code is not None


class DirectResults(ResultsHeader):
    what: ClassVar[str] = "direct results file"
    kind: Literal["direct"] = "direct"
    version: int = DIRECT_RESULTS_VERSION
    model: dict[str, str]
    suite: dict[str, Any]
    config: dict[str, Any]
    answers: list[DirectAnswer] = Field(default_factory=list)
    aggregates: dict[str, Any] = Field(default_factory=dict)

    def markdown(self) -> str:
        return render_direct_markdown(self)


def aggregate_direct(answers: list[DirectAnswer]) -> dict[str, Any]:
    """Checker passed and expected change (Wilson intervals) over scored answers, per family too; findings."""
    scored = [a for a in answers if a.scored]
    out: dict[str, Any] = {"answers": len(answers), "scored": len(scored), "unscored": len(answers) - len(scored)}
    out["rates"] = {
        "checker_passed": rate(sum(a.checker_exit_code == 0 for a in scored), len(scored)).as_dict(),
        "expected_change": rate(sum(bool(a.expected_change) for a in scored), len(scored)).as_dict(),
        "gave_a_file": rate(sum(bool(a.files) for a in scored), len(scored)).as_dict(),
    }
    out["stopped_at_token_cap"] = sum(1 for a in scored if a.finish_reason == "length")
    out["findings"] = dict(Counter(f for a in scored for f in a.findings).most_common())
    fams: dict[str, list[int]] = {}
    for a in scored:
        row = fams.setdefault(a.family or a.task_id, [0, 0])
        row[0] += a.checker_exit_code == 0
        row[1] += 1
    out["per_family"] = {k: rate(*v).as_dict() for k, v in sorted(fams.items())}
    return out


def render_direct_markdown(results: DirectResults) -> str:
    agg = results.aggregates
    lines = [
        f"# Direct answers: {md_cell(results.model.get('name', '?'))} on {md_cell(results.suite.get('name', '?'))}",
        "",
        "Each task answered in one reply without the harness (its prompt and folder given, the new files asked "
        "for), then judged by the task's own checker. The model ran nothing.",
        "",
        f"Answers {agg.get('answers', 0)}, scored {agg.get('scored', 0)}; stopped at the token cap "
        f"{agg.get('stopped_at_token_cap', 0)}.",
        "",
        "| metric | rate [95% CI] |",
        "|---|---|",
    ]
    for name, r in agg.get("rates", {}).items():
        lines.append(f"| {name.replace('_', ' ')} | {fmt_rate(r)} |")
    lines += ["", "| task | seed | checker | files | findings |", "|---|---|---|---|---|"]
    for a in results.answers:
        verdict = "unscored" if not a.scored else ("passed" if a.checker_exit_code == 0 else "failed")
        lines.append(
            f"| {md_cell(a.task_id)} | {a.seed} | {verdict} | {md_cell(', '.join(a.files) or '-')} | "
            f"{md_cell(', '.join(a.findings) or a.error or '-')} |"
        )
    return "\n".join(lines) + "\n"


def _answer(
    task: Task,
    family: str | None,
    seed: int,
    endpoint: Endpoint,
    out_dir: Path,
    *,
    max_tokens: int,
    temperature: float,
    sandbox: bool,
) -> DirectAnswer:
    answer = DirectAnswer(task_id=task.id, family=family, seed=seed)
    try:
        reply = chat(
            endpoint.base_url,
            endpoint.model_id,
            direct_messages(task),
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            api_key=endpoint.api_key,
        )
    except ChatError as exc:
        answer.status, answer.error = "error", f"endpoint: {exc}"
        return answer
    answer.reply, answer.finish_reason = reply.content, reply.finish_reason
    shown = [p.relative_to(task.workspace_dir).as_posix() for p in _folder_files(task)]
    taken = files_from_reply(reply.content or "", [c.path for c in task.expected_change], shown)
    answer.files, answer.findings = sorted(taken.files), taken.findings
    ep_dir = out_dir / "answers" / task.id / f"seed-{seed}"
    workspace = ep_dir / "workspace"
    shutil.rmtree(ep_dir, ignore_errors=True)
    (ep_dir / "runner" / "etc").mkdir(parents=True)
    if task.workspace_dir.is_dir():
        shutil.copytree(task.workspace_dir, workspace, symlinks=True)
    workspace.mkdir(exist_ok=True)
    staging = ep_dir / "reply"  # a fresh folder, then copied in without following any link the fixture holds
    for rel, text in taken.files.items():
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).write_text(text, encoding="utf-8")
    copy_into(staging, workspace)
    answer.expected_change = all(c.holds(workspace) for c in task.expected_change)
    answer.checker_exit_code, answer.checker_output, _ = run_checker(task, workspace, ep_dir, sandboxed=sandbox)
    return answer


def run_direct(
    endpoint_or_model: Endpoint | str,
    suite_dir: Path,
    out_dir: Path,
    *,
    seeds: int = 1,
    temperature: float | None = None,
    max_tokens: int = 512,
    task_ids: list[str] | None = None,
    sandbox: bool = True,
    responder: Callable | None = None,
    progress: bool = True,
    **serve_kwargs: Any,
) -> DirectResults:
    """Answer every task x seed of ``suite_dir`` directly; writes ``out_dir/results.{json,md}`` and
    ``out_dir/answers/<task>/seed-N/`` (the folder as judged, the checker's output)."""
    if seeds < 1 or max_tokens < 1:
        raise UserError("--seeds and --max-tokens must be at least 1")
    if isinstance(endpoint_or_model, str) and endpoint_or_model.startswith("scripted:") and responder is None:
        raise UserError("scripted models play agent tasks through Pi, not direct answers: pass a model or --endpoint")
    tasks = only_tasks(load_suite(Path(suite_dir)), task_ids, Path(suite_dir))
    families = {k: fam for k, (fam, _split) in suite_families(Path(suite_dir)).items()}
    temp = sampling_temperature(seeds, temperature)
    sandbox_status = require_sandbox() if sandbox else "none (--no-sandbox)"
    config = {"seeds": seeds, "temperature": temp, "max_tokens": max_tokens, "sandbox": sandbox_status}
    suite = {"name": Path(suite_dir).name, "path": str(suite_dir), "tasks": [t.id for t in tasks]}
    out_dir = Path(out_dir)
    results = DirectResults(model={"name": str(endpoint_or_model)}, suite=suite, config=config)
    jobs = [(t, s) for t in tasks for s in range(seeds)]
    with results.lifecycle(out_dir):
        with open_endpoint(endpoint_or_model, [], responder=responder, **serve_kwargs) as endpoint:
            results.model = {"name": endpoint.label, "model_id": endpoint.model_id}
            adapter = serve_kwargs.get("adapter")
            if adapter is not None:  # named as ``served_label`` names a served adapter: its last two path parts
                results.model["name"] += " + " + "/".join(Path(str(adapter)).parts[-2:])
                results.model["adapter"] = str(adapter)
            columns = (TextColumn("direct {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            with Progress(*columns, disable=not progress, transient=True) as bar:
                tid = bar.add_task(f"{suite['name']} · {endpoint.label}", total=len(jobs))
                for task, seed in jobs:
                    one = _answer(
                        task,
                        families.get(task.id),
                        seed,
                        endpoint,
                        out_dir,
                        max_tokens=max_tokens,
                        temperature=temp,
                        sandbox=sandbox,
                    )
                    results.answers.append(one)
                    bar.advance(tid)
        results.aggregates = aggregate_direct(results.answers)
    results.finish(out_dir)
    return results
