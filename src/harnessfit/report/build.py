"""``build_report``: the static HTML report of a run folder — ``index.html`` with one section per stage the run has,
a page per eval episode, figures as SVG, the run's own small files copied in — that opens from disk, offline.

The folder is complete on its own (no link leaves it, nothing loads from the network), so it can be moved, zipped
or served (``harnessfit view``). Rebuilding into the same folder replaces what an earlier build wrote there; a
folder that holds anything else is refused.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harnessfit import __version__
from harnessfit.errors import UserError
from harnessfit.report.locate import canonical_view, find_stages, is_canonical
from harnessfit.report.sections import SECTIONS
from harnessfit.report.site import MARKER, FileSource, Page, Section, render

__all__ = ["ReportResult", "build_report"]


@dataclass
class ReportResult:
    index: Path
    sections: list[str]
    pages: int
    skipped: dict[str, str] = field(default_factory=dict)  # section key -> why it could not be built


def _check_out(out: Path, run_dir: Path) -> None:
    if out == run_dir or run_dir.is_relative_to(out):
        raise UserError(f"--out {out} would hold the run folder itself; choose a folder inside or beside it")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise UserError(
            f"--out {out} is not empty and was not written by `harnessfit report`; choose an empty or new folder"
        )


def _write(out: Path, rel: str, src: FileSource) -> None:
    dest = out / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(src, bytes):
        dest.write_bytes(src)
    elif isinstance(src, Path):
        shutil.copyfile(src, dest)
    else:
        src(dest)


def _prune(out: Path, keep: set[str]) -> None:
    """Remove files an earlier build left that this build did not write (then empty folders)."""
    for dirpath, _, filenames in os.walk(out, topdown=False):
        for name in filenames:
            rel = (Path(dirpath) / name).relative_to(out).as_posix()
            if rel not in keep and rel != MARKER:
                (Path(dirpath) / name).unlink()
        if Path(dirpath) != out and not any(Path(dirpath).iterdir()):
            Path(dirpath).rmdir()


def report_folders(
    folders: Sequence[Path], out: Path | None = None, *, workers: int = 2, progress: bool = False
) -> ReportResult:
    """The report of a run laid out any way: one folder in the demo's layout is read as it is; otherwise the stages
    are found by their own metadata files under ``folders`` (``report.locate``) and shown together. The report goes
    to ``out``, by default ``FOLDER/report`` for one folder (several need ``out``)."""
    folders = [Path(f) for f in folders]
    if not folders:
        raise UserError("give at least one run folder")
    for f in folders:
        if not f.is_dir():
            raise UserError(f"run folder not found: {f}")
    if len(folders) == 1 and is_canonical(folders[0]):
        return build_report(folders[0], out, workers=workers, progress=progress)
    if out is None and len(folders) > 1:
        raise UserError("several run folders: say where the report goes with --out DIR")
    stages = find_stages(folders)
    if not stages:
        raise UserError(
            f"no stage output found under {', '.join(map(str, folders))}: a report reads folders written "
            "by harnessfit convert, build, audit, train sft/grpo/rl, eval agent and synth"
        )
    view, notes = canonical_view(stages)
    try:
        res = build_report(
            view,
            out if out is not None else folders[0] / "report",
            workers=workers,
            progress=progress,
            run_name=" + ".join(f.resolve().name for f in folders),
            shown=", ".join(str(f.resolve()) for f in folders),
            notes=notes,
        )
    finally:
        shutil.rmtree(view, ignore_errors=True)  # links only: the stages' own files stay
    return res


def build_report(
    run_dir: Path,
    out: Path | None = None,
    *,
    sections: Mapping[str, object] | None = None,
    workers: int = 2,
    progress: bool = False,
    run_name: str | None = None,
    shown: str | None = None,
    notes: Sequence[str] = (),
) -> ReportResult:
    """Write the report of ``run_dir`` into ``out`` (default ``RUN_DIR/report``); returns where ``index.html`` is.

    ``sections`` defaults to ``harnessfit.report.sections.SECTIONS``. A section whose files cannot be read is left
    out and named in ``ReportResult.skipped`` (and on the index page) with the reason. ``name`` and ``shown`` replace
    the run's folder name and path on the pages (``report_folders`` passes the folders it was given); ``notes`` go
    on the index page.
    """
    run_dir = Path(run_dir).resolve()
    if not run_dir.is_dir():
        raise UserError(f"run folder not found: {run_dir}")
    out = Path(out).resolve() if out is not None else run_dir / "report"
    _check_out(out, run_dir)
    built: list[Section] = []
    skipped: dict[str, str] = {}
    for name, fn in (sections if sections is not None else SECTIONS).items():
        try:
            sec = fn(run_dir)  # type: ignore[operator]
        except Exception as exc:  # noqa: BLE001 - one unreadable stage must not hide the others; named on the page
            skipped[name] = f"{type(exc).__name__}: {exc}"[:300]
            continue
        if sec is not None:
            built.append(sec)
    if not built:
        raise UserError(
            f"{shown or run_dir}: no stage folder found that the report knows (harness/, synth/, "
            "convert/, dataset/, audit/, train/, grpo/, rl/, eval/, results.json)"
            + (f"; unreadable: {', '.join(skipped)}" if skipped else "")
        )
    keys = [s.key for s in built]
    if len(set(keys)) != len(keys):
        raise UserError(f"two report sections share a key: {keys}")

    files: dict[str, FileSource] = {}
    pages: list[Page] = []
    for s in built:
        files.update(s.files)
        pages += s.pages
    common = {"version": __version__, "run_name": run_name or run_dir.name}
    documents: dict[str, str] = {}
    for p in pages:
        documents[p.path] = render(
            "base.html.jinja", here=p.path, title=p.title, body=p.body, crumbs=[("overview", "index.html")], **common
        )
    index_body = render(
        "index.html.jinja",
        sections=built,
        skipped=sorted(skipped.items()),
        run_dir=shown or str(run_dir),
        notes=list(notes),
        **common,
    )
    documents["index.html"] = render(
        "base.html.jinja", title=f"harnessfit report — {common['run_name']}", body=index_body, crumbs=[], **common
    )

    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text(
        "written by harnessfit report; rebuilding replaces this folder's files\n", encoding="utf-8"
    )
    for rel, text in documents.items():
        _write(out, rel, text.encode("utf-8"))
    eager = {k: v for k, v in files.items() if not callable(v)}
    slow = {k: v for k, v in files.items() if callable(v)}
    for rel, src in eager.items():
        _write(out, rel, src)
    with Progress(
        TextColumn("report: {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=not progress or not slow,
        transient=True,
    ) as bar:
        tid = bar.add_task("Pi session exports", total=len(slow))
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for _ in pool.map(lambda item: _write(out, *item), slow.items()):
                bar.advance(tid)
    _prune(out, set(documents) | set(files))
    return ReportResult(out / "index.html", keys, len(pages), skipped)
