"""Figures of the HTML report, drawn by matplotlib as SVG (no pyplot state, no date in the file: same input, same
bytes).

``Curve`` describes one training figure by the metric keys it draws (exact keys or ``fnmatch`` patterns such as
``rewards/*/mean``), so the same function draws SFT curves (loss, token accuracy, learning rate) and GRPO curves
(reward components, KL, completion length) from a metrics JSONL of logged rows with a ``step``.
"""

from __future__ import annotations

import fnmatch
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Curve", "curve_keys", "curve_svg", "intervals_svg"]

_COLORS = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#000000")


@dataclass(frozen=True)
class Curve:
    """One figure: the values of ``keys`` (or keys matching them as patterns) against the optimizer step."""

    name: str  # file stem of the SVG
    title: str
    ylabel: str
    keys: tuple[str, ...]
    log: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)  # legend names for exact keys; else the key itself


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def curve_keys(rows: Sequence[Mapping[str, Any]], curve: Curve) -> list[str]:
    """The metric keys of ``rows`` that ``curve`` draws, in the order of its patterns then of first appearance."""
    seen: dict[str, None] = {}
    for row in rows:
        for k, v in row.items():
            if _is_number(v):
                seen.setdefault(k)
    out: list[str] = []
    for pattern in curve.keys:
        for k in seen:
            if k not in out and (k == pattern or fnmatch.fnmatchcase(k, pattern)):
                out.append(k)
    return out


def _figure(width: float = 6.4, height: float = 3.4):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="tight")
    return fig, fig.subplots()


def _svg(fig) -> bytes:
    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "harnessfit", "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def curve_svg(rows: Sequence[Mapping[str, Any]], curve: Curve) -> bytes | None:
    """The figure as SVG bytes, or None when no row has a value to draw for any of its keys."""
    keys = curve_keys(rows, curve)
    if not keys:
        return None
    fig, ax = _figure()
    drawn = 0
    for i, key in enumerate(keys):
        pts = [(r["step"], r[key]) for r in rows if _is_number(r.get(key)) and _is_number(r.get("step"))]
        if curve.log:
            pts = [p for p in pts if p[1] > 0]
        if not pts:
            continue
        drawn += 1
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            marker="o" if len(pts) < 30 else None,
            markersize=3,
            color=_COLORS[i % len(_COLORS)],
            label=curve.labels.get(key, key),
        )
    if not drawn:
        return None
    if curve.log:
        ax.set_yscale("log")
    ax.set_title(curve.title, fontsize=11)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel(curve.ylabel)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _svg(fig)


def intervals_svg(
    labels: Sequence[str], models: Sequence[str], rates: Sequence[Sequence[Mapping[str, Any] | None]]
) -> bytes | None:
    """Rates with their 95% intervals: one row per label, one marker per model (``rates[label][model]``)."""
    if not labels or not models:
        return None
    fig, ax = _figure(7.2, 0.42 * len(labels) + 1.2)
    step = 0.7 / max(len(models), 1)
    drawn = False
    for j, model in enumerate(models):
        ys, xs, lo, hi = [], [], [], []
        for i in range(len(labels)):
            r = rates[i][j] if j < len(rates[i]) else None
            if not r or r.get("rate") is None:
                continue
            ys.append(len(labels) - 1 - i + (j - (len(models) - 1) / 2) * step)
            xs.append(100 * r["rate"])
            lo.append(100 * (r["rate"] - r["ci95_low"]))
            hi.append(100 * (r["ci95_high"] - r["rate"]))
        if xs:
            ax.errorbar(
                xs, ys, xerr=[lo, hi], fmt="o", markersize=4, capsize=3, color=_COLORS[j % len(_COLORS)], label=model
            )
            drawn = True
    if not drawn:
        return None
    ax.set_yticks(range(len(labels)), list(reversed(labels)), fontsize=8)
    ax.set_xlim(-2, 102)
    ax.set_xlabel("rate, % (95% Wilson interval)")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower right")
    return _svg(fig)
