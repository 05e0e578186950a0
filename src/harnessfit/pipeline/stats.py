"""Per-stage seconds: one clock for every stage of a run, in wall-clock and CPU time (``time.process_time``, which
a loaded machine does not inflate). Workers keep their own and the parent adds them up (``merge``)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import TypeVar

__all__ = ["StageClock"]

T = TypeVar("T")


class StageClock:
    """``with clock("redact"): …`` adds the block's seconds to that stage; ``clock.timed("convert", it)`` adds the
    time spent producing each item of ``it``. ``seconds`` / ``cpu_seconds``: totals per stage."""

    __slots__ = ("seconds", "cpu_seconds")

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.cpu_seconds: Counter[str] = Counter()

    def __call__(self, stage: str) -> _Span:
        return _Span(self, stage)

    def timed(self, stage: str, items: Iterable[T]) -> Iterator[T]:
        it = iter(items)
        while True:
            t, c = time.perf_counter(), time.process_time()
            try:
                item = next(it)
            except StopIteration:
                return
            finally:
                self.seconds[stage] += time.perf_counter() - t
                self.cpu_seconds[stage] += time.process_time() - c
            yield item

    def merge(self, other: StageClock | tuple[dict[str, float], dict[str, float]]) -> None:
        seconds, cpu = (other.seconds, other.cpu_seconds) if isinstance(other, StageClock) else other
        self.seconds.update(seconds)
        self.cpu_seconds.update(cpu)

    def take(self) -> tuple[dict[str, float], dict[str, float]]:
        """The totals so far (to send to the parent), and start again from zero."""
        out = (dict(self.seconds), dict(self.cpu_seconds))
        self.seconds.clear()
        self.cpu_seconds.clear()
        return out

    def rounded(self) -> tuple[dict[str, float], dict[str, float]]:
        return (
            {k: round(v, 4) for k, v in self.seconds.items()},
            {k: round(v, 4) for k, v in self.cpu_seconds.items()},
        )


class _Span:
    __slots__ = ("clock", "stage", "t", "c")

    def __init__(self, clock: StageClock, stage: str) -> None:
        self.clock, self.stage = clock, stage

    def __enter__(self) -> _Span:
        self.t, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.clock.seconds[self.stage] += time.perf_counter() - self.t
        self.clock.cpu_seconds[self.stage] += time.process_time() - self.c
