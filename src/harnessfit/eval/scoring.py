"""The metric registry of ``eval agent``: one decorated function per metric, as inspect_ai's ``@scorer``.

A scorer takes what one episode recorded (``EpisodeRecord``, eval/record.py: the runner's facts, the messages of
Pi's event stream, the tool calls as judged once) and returns the metric's value, or ``Unscored(reason)`` when the
episode cannot say. A scorer may read another metric through ``record.value(name)``.

How a metric is shown follows from its registration: ``aggregate="rate"`` (a boolean: a share with its 95% Wilson
interval in ``aggregates["rates"]``), ``"mean"`` (a number: ``aggregates["means"]``) or None (kept per episode
only); a ``label`` gives it a row in the results Markdown. The built-in metrics are the fields of
``EpisodeMetrics``; any other registered metric is stored per episode in ``EpisodeMetrics.scores``. So adding a
metric is one function::

    @scorer(aggregate="rate", label="Used the read tool")
    def used_read(record: EpisodeRecord) -> bool:
        return any(call.name == "read" for call in record.calls)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Unscored", "Scorer", "SCORERS", "scorer", "unregister"]


@dataclass(frozen=True)
class Unscored:
    """A scorer's explicit "no value here", with the reason (kept out of the metric's aggregate, counted)."""

    reason: str


@dataclass(frozen=True)
class Scorer:
    name: str
    fn: Callable[[Any], Any]
    aggregate: Literal["rate", "mean"] | None = None
    label: str | None = None  # the metric's row in the results Markdown; None: no row
    good: bool = True  # True: a higher value is better (the report colours a rate by it)


# name -> scorer, in registration order (the order of the rates and means in results.json and the Markdown)
SCORERS: dict[str, Scorer] = {}


def scorer(
    name: str | None = None,
    *,
    aggregate: Literal["rate", "mean"] | None = None,
    label: str | None = None,
    good: bool = True,
) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Register the decorated function as the metric ``name`` (default: the function's name)."""
    if aggregate not in (None, "rate", "mean"):
        raise ValueError(f"aggregate must be 'rate', 'mean' or None, not {aggregate!r}")

    def register(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        key = name or fn.__name__
        if key in SCORERS:
            raise ValueError(f"a metric named {key!r} is already registered")
        SCORERS[key] = Scorer(key, fn, aggregate, label, good)
        return fn

    return register


def unregister(name: str) -> None:
    """Remove the metric ``name`` (a test's own metric, after the test)."""
    SCORERS.pop(name, None)
