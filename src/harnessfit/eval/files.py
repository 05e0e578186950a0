"""Results files of every eval stage (``eval agent``, raw, pairwise, probe): one JSON and one Markdown file per run,
written atomically, under one header (``ResultsHeader``: ``kind``, ``version``, ``status``, ``error``) and one run
lifecycle — ``started`` when the run begins, then ``success``, or ``error`` with the reason when it raised (as
inspect_ai's EvalLog); and the escaping every Markdown cell holding model output goes through.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

import orjson
from pydantic import BaseModel

from harnessfit.errors import UserError

__all__ = ["ResultsHeader", "write_results_files", "read_results_file", "md_cell"]

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


class ResultsHeader(BaseModel):
    """The header every results family shares, and its lifecycle. A family sets ``kind`` and ``version`` (as
    defaults), names itself in ``what`` and renders its Markdown in ``markdown()``. ``eval agent``'s results predate
    ``kind``: they leave it out (``Field(default=None, exclude=True)``)."""

    what: ClassVar[str] = "results file"
    kind: str | None = None
    version: int
    status: Literal["started", "success", "error"] = "started"
    error: str | None = None

    def markdown(self) -> str:
        raise NotImplementedError

    def write(self, out_dir: Path) -> Path:
        """``results.json`` always, ``results.md`` once the run has finished; returns the JSON path."""
        return write_results_files(
            out_dir, self.model_dump(mode="json"), self.markdown() if self.status != "started" else None
        )

    @classmethod
    def load(cls, path: Path) -> Self:
        """A results file of this family (a folder holding ``results.json`` also works); clear errors otherwise."""
        fields = cls.model_fields
        return cls.model_validate(
            read_results_file(path, fields["kind"].default, fields["version"].default, what=cls.what)
        )

    @contextmanager
    def lifecycle(self, out_dir: Path) -> Iterator[Self]:
        """Write the file as ``started``; when the block raises, record ``error`` (a UserError's own words, otherwise
        the exception's type and message), write it and re-raise. ``finish`` records the success."""
        self.write(out_dir)
        try:
            yield self
        except Exception as exc:
            self.status = "error"
            self.error = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
            self.write(out_dir)
            raise

    def finish(self, out_dir: Path) -> Path:
        self.status = "success"
        return self.write(out_dir)
