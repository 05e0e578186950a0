"""Results files of the raw, pairwise and probe stages: one JSON (``kind``, ``version``, ``status``) and one Markdown
file per run, written atomically; and the escaping every Markdown cell holding model output goes through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from harnessfit.errors import UserError

__all__ = ["write_results_files", "read_results_file", "md_cell"]

_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|#"})


def md_cell(text: Any, limit: int = 160) -> str:
    """``text`` safe inside a Markdown table cell: one line, Markdown and HTML characters escaped, cut at ``limit``."""
    s = " ".join(str(text).split())
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return s.translate(_MD_SPECIAL)


def write_results_files(out_dir: Path, data: dict[str, Any], markdown: str | None, *, stem: str = "results") -> Path:
    """Write ``<stem>.json`` (atomically) and, when given, ``<stem>.md``; returns the JSON path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    tmp.replace(path)
    if markdown is not None:
        (out_dir / f"{stem}.md").write_text(markdown, encoding="utf-8")
    return path


def read_results_file(path: Path, kind: str | None, version: int, *, what: str) -> dict[str, Any]:
    """The JSON of a results file of ``kind``/``version`` (a folder holding ``results.json`` also works); ``kind``
    ``None``: the file names no kind (``eval agent``'s results, which predate the field)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise UserError(f"{what} not found: {path}")
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise UserError(f"{path}: not JSON ({exc})") from exc
    if not isinstance(data, dict) or (kind is not None and data.get("kind") != kind) or data.get("version") != version:
        raise UserError(f"{path}: not a harnessfit {what} of version {version}")
    return data
