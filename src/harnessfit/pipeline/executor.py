"""One parallel engine for every stage that fans out: ``ordered_map(fn, items, workers=…)`` is ``map(fn, items)``
run in worker processes (the standard library's ``ProcessPoolExecutor``), its results yielded in item order, so
what a caller writes is the same bytes for any worker count.

Memory stays bounded: at most ``window`` items are in flight (submitted and not yet yielded), so results that
finish ahead of a slow one wait in a bounded buffer. Workers are forked where the platform allows (they start with
the parent's imports and state, e.g. a loaded harness card) and ignore Ctrl-C, which the parent handles; an
exception in ``fn`` is raised in the caller, and closing the iteration early stops the workers.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import islice
from typing import Any, TypeVar

__all__ = ["ordered_map", "WINDOW_PER_WORKER"]

T = TypeVar("T")
R = TypeVar("R")
WINDOW_PER_WORKER = 8  # items per worker that may be in flight ahead of the oldest unfinished one


def _start_worker(initializer: Callable[..., Any] | None, initargs: tuple[Any, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops the workers
    if initializer is not None:
        initializer(*initargs)


def ordered_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    workers: int = 1,
    initializer: Callable[..., Any] | None = None,
    initargs: tuple[Any, ...] = (),
    window: int | None = None,
) -> Iterator[R]:
    """``fn(item)`` for each of ``items``, in order. ``workers <= 1``: in this process (``initializer`` runs here
    first). Otherwise in ``workers`` processes, each set up by ``initializer(*initargs)``; ``fn`` and the items
    must be picklable (a module-level function). ``window``: items in flight (default ``WINDOW_PER_WORKER`` per
    worker)."""
    if workers <= 1:
        if initializer is not None:
            initializer(*initargs)
        for item in items:
            yield fn(item)
        return
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_start_worker, initargs=(initializer, initargs))
    pending: deque[Future[R]] = deque()
    source = iter(items)
    try:
        for item in islice(source, max(1, window or WINDOW_PER_WORKER * workers)):
            pending.append(pool.submit(fn, item))
        while pending:
            try:
                result = pending.popleft().result()
            except BrokenProcessPool as exc:
                raise RuntimeError("a worker process exited unexpectedly (killed, or out of memory?)") from exc
            for item in islice(source, 1):
                pending.append(pool.submit(fn, item))
            yield result
    finally:
        for fut in pending:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
