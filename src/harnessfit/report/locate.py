"""Finding a run's stages by what they wrote, wherever they sit, so ``harnessfit report A B C`` reads any layout.

The report's sections read the layout ``harnessfit demo`` writes (``RUN/dataset``, ``RUN/audit``, ``RUN/train``,
``RUN/grpo``, ``RUN/eval/<name>``, ...). A user's run is laid out as they chose: ``build --out X`` then ``audit X``
(which writes ``X-audit`` beside it), an eval at the top of a folder, stages spread over several folders. Each stage
is told by its own metadata file, never by its folder's name:

| stage | a folder holding |
|---|---|
| convert | ``accounting.json`` and ``yield.json`` (and no build ``manifest.json``) |
| dataset | ``manifest.json`` with ``splits`` and ``harness_card`` (``harnessfit build``) |
| audit | ``audit.json`` and ``tokenized/meta.json`` |
| train | ``result.json`` with ``global_step`` and ``recipe.json`` of a ``HarnessfitSFTConfig`` |
| grpo | ``grpo_stats.json`` or ``completions.jsonl`` beside ``recipe.json`` of a ``HarnessfitGRPOConfig`` |
| rl | ``metrics.jsonl`` or ``episodes.jsonl`` beside ``recipe.json`` of a ``HarnessfitRLConfig`` (or ``rl_report.md``) |
| eval | ``results.json`` of an agent eval (``episodes``) |
| synth | ``manifest.json`` with ``"stage": "synth"`` |

``canonical_view`` lays the found stages out as the sections expect (an rl run's held-out evals ``eval_before/`` and
``eval_after/`` also as eval folders), as symbolic links in a temporary folder (the
sections copy what they show into the report, so nothing points back into the view). A folder already in the demo's
layout is used as it is.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from harnessfit.core.jsonio import read_json_object
from harnessfit.errors import UserError

__all__ = ["STAGE_FOLDERS", "stage_of", "find_stages", "canonical_view", "is_canonical"]

# where each stage sits in the demo's layout (what the sections read)
STAGE_FOLDERS = {
    "convert": "convert",
    "dataset": "dataset",
    "audit": "audit",
    "train": "train",
    "grpo": "grpo",
    "rl": "rl",
    "synth": "synth",
}
_CANONICAL = (
    "harness",
    "synth",
    "dataset",
    "audit",
    "train",
    "grpo",
    "rl",
    "eval",
    "convert",
    "raw",
    "probe",
    "steps.json",
    "results.json",
)
_MAX_DEPTH = 4


def _config_class(folder: Path) -> str | None:
    recipe = read_json_object(folder / "recipe.json") if (folder / "recipe.json").is_file() else None
    return recipe.get("config_class") if recipe else None


def stage_of(folder: Path) -> str | None:
    """The stage whose output ``folder`` is, told by its metadata files (see the module docstring), or None."""
    f = Path(folder)
    if (f / "manifest.json").is_file():
        m = read_json_object(f / "manifest.json") or {}
        if m.get("stage") == "synth":
            return "synth"
        if "splits" in m and "harness_card" in m:
            return "dataset"
    if (f / "audit.json").is_file() and (f / "tokenized" / "meta.json").is_file():
        return "audit"
    cls = _config_class(f)
    if cls == "HarnessfitGRPOConfig" and ((f / "grpo_stats.json").is_file() or (f / "completions.jsonl").is_file()):
        return "grpo"
    rl_logs = (f / "metrics.jsonl").is_file() or (f / "episodes.jsonl").is_file()
    if rl_logs and (cls == "HarnessfitRLConfig" or (f / "rl_report.md").is_file()):
        return "rl"
    if cls == "HarnessfitSFTConfig" and "global_step" in (read_json_object(f / "result.json") or {}):
        return "train"
    if (f / "results.json").is_file() and "episodes" in (read_json_object(f / "results.json") or {}):
        return "eval"
    if (f / "accounting.json").is_file() and (f / "yield.json").is_file():
        return "convert"
    return None


def _walk(root: Path, depth: int = 0) -> Iterator[tuple[str, Path]]:
    kind = stage_of(root)
    if kind is not None:  # a stage's own subfolders are not further stages (an eval's episodes/ included)
        yield kind, root
        return
    if depth >= _MAX_DEPTH:
        return
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and p.name != "report")
    except OSError:
        return
    for child in children:
        yield from _walk(child, depth + 1)


def find_stages(roots: Sequence[Path]) -> dict[str, list[Path]]:
    """Every stage folder under ``roots`` (a root may itself be one), in path order per stage."""
    found: dict[str, list[Path]] = {}
    for root in roots:
        root = Path(root).resolve()
        if not root.is_dir():
            raise UserError(f"run folder not found: {root}")
        for kind, folder in _walk(root):
            if folder not in found.setdefault(kind, []):
                found[kind].append(folder)
    return found


def is_canonical(folder: Path) -> bool:
    """True for a folder laid out as ``harnessfit demo`` writes it (a stage folder name or file the sections read)."""
    return any((Path(folder) / name).exists() for name in _CANONICAL) and stage_of(folder) is None


def canonical_view(stages: dict[str, list[Path]]) -> tuple[Path, list[str]]:
    """A temporary folder laying ``stages`` out as the sections read them; returns it and notes (a stage found more
    than once: the first is shown, the others named). The caller removes the folder."""
    view = Path(tempfile.mkdtemp(prefix="harnessfit-report-view-"))
    notes: list[str] = []
    for kind, folders in stages.items():
        if kind == "eval":
            (view / "eval").mkdir(exist_ok=True)
            names: set[str] = set()
            for folder in folders:
                name = folder.name
                while name in names:
                    name = f"{name}-{len(names)}"
                names.add(name)
                os.symlink(folder, view / "eval" / name)
            continue
        os.symlink(folders[0], view / STAGE_FOLDERS[kind])
        if kind == "rl":  # its held-out evals are eval folders too: the eval section gives them episode pages
            for phase in ("eval_before", "eval_after"):
                if (folders[0] / phase / "results.json").is_file():
                    (view / "eval").mkdir(exist_ok=True)
                    os.symlink(folders[0] / phase, view / "eval" / f"rl-{phase}")
        if len(folders) > 1:
            notes.append(
                f"{len(folders)} {kind} folders found: showing {folders[0]}, not "
                + ", ".join(str(f) for f in folders[1:])
            )
    return view, notes
