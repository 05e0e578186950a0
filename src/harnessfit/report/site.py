"""The pieces every report section is made of: ``Section`` and ``Page``, the Jinja2 environment, relative links.

A section is an HTML fragment for ``index.html`` plus the files and extra pages it needs (figures, episode pages,
Pi's own export of a session). Templates autoescape everything, so text from traces or model output is shown as
text; the only markup that passes unescaped is what a template produced itself (``Markup`` values).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from markupsafe import Markup

from harnessfit.eval.results import fmt_rate as _fmt

__all__ = ["MARKER", "Section", "Page", "FileSource", "render", "rel_url", "fmt_rate", "fmt_num", "markdown_html"]

MARKER = ".harnessfit-report"  # marks a folder the report builder wrote, so a rebuild may replace its files

# What a section may ask the builder to write at a report-relative path: bytes, a file to copy, or a function that
# writes the file itself (used for slow producers such as ``pi --export``, which the builder runs in parallel).
FileSource = bytes | Path | Callable[[Path], None]


@dataclass
class Page:
    """An extra document of the report (e.g. one episode), laid out with the report's base template."""

    path: str  # report-relative POSIX path, e.g. "episodes/base/create_fizzbuzz/seed-0.html"
    title: str
    body: Markup  # rendered with ``render(..., here=path)`` so its links are relative to the page itself


@dataclass
class Section:
    """One stage's part of ``index.html``; ``body`` links are relative to the report's root."""

    key: str  # anchor id on index.html, unique in the report
    title: str
    body: Markup
    summary: str = ""  # one line for the overview at the top of index.html
    files: dict[str, FileSource] = field(default_factory=dict)
    pages: list[Page] = field(default_factory=list)


def rel_url(here: str, target: str) -> str:
    """Link from the report page ``here`` to the report path ``target`` (both report-relative POSIX paths)."""
    base = posixpath.dirname(here) or "."
    return posixpath.relpath(target, base)


def fmt_rate(r: dict[str, Any] | None) -> str:
    """``25% [5–70] (1/4)`` from a rate dict of ``eval.stats.Rate.as_dict``; ``n/a`` when nothing was scored."""
    return "n/a" if not r else _fmt(r)


def fmt_num(x: Any, digits: int = 4) -> str:
    """Numbers for tables: whole and large numbers with thousands separators, other floats with ``digits``
    significant digits."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if x.is_integer() or abs(x) >= 10**digits:
            return f"{x:,.0f}"
        return f"{x:.{digits}g}"
    return str(x)


def markdown_html(text: str) -> Markup:
    """CommonMark to HTML with raw HTML disabled (so any markup inside the text is escaped, not rendered)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    return Markup(md.render(text))


@cache
def _env():
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(
        loader=PackageLoader("harnessfit.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["num"] = fmt_num
    return env


def render(template: str, *, here: str = "index.html", **context: Any) -> Markup:
    """Render ``templates/<template>`` with ``url(target)`` resolving report paths relative to the page ``here``."""
    return Markup(_env().get_template(template).render(url=lambda target: rel_url(here, target), here=here, **context))
