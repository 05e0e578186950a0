"""The one process pool (``ordered_map``) and the stage clock, through their public functions."""

from __future__ import annotations

import multiprocessing as mp
import os
import time

from harnessfit.pipeline import StageClock, ordered_map

_STATE: dict[str, int] = {}


def _set_offset(offset: int) -> None:
    _STATE["offset"] = offset


def _slow_first(i: int) -> tuple[int, int]:  # module level: the workers run it
    time.sleep(0.3 if i == 0 else 0.01)
    return i + _STATE["offset"], os.getpid()


def test_results_come_in_item_order_from_initialised_workers():
    out = list(ordered_map(_slow_first, range(12), workers=2, initializer=_set_offset, initargs=(100,), window=4))
    assert [v for v, _ in out] == list(range(100, 112))
    assert len({pid for _, pid in out}) == 2 and os.getpid() not in {pid for _, pid in out}
    assert not mp.active_children()
    local = list(ordered_map(_slow_first, range(3), workers=1, initializer=_set_offset, initargs=(7,)))
    assert [v for v, _ in local] == [7, 8, 9] and {pid for _, pid in local} == {os.getpid()}


def test_no_more_than_the_window_is_taken_ahead_of_the_oldest_result():
    pulled: list[int] = []

    def source():
        for i in range(20):
            pulled.append(i)
            yield i

    it = ordered_map(_slow_first, source(), workers=2, initializer=_set_offset, initargs=(0,), window=3)
    assert next(it)[0] == 0
    assert len(pulled) <= 4  # three in flight, one more once the first is out
    assert [v for v, _ in it] == list(range(1, 20))


def test_stage_clock_adds_wall_and_cpu_seconds_per_stage():
    clock = StageClock()
    with clock("busy"):
        sum(i * i for i in range(200_000))
    with clock("idle"):
        time.sleep(0.05)
    items = list(clock.timed("produce", (time.sleep(0.01) or i for i in range(3))))
    assert items == [0, 1, 2]
    assert clock.cpu_seconds["busy"] > 0 and clock.seconds["idle"] >= 0.05 > clock.cpu_seconds["idle"]
    assert clock.seconds["produce"] >= 0.03
    other = StageClock()
    other.merge(clock.take())
    assert clock.seconds == {} and other.seconds["busy"] > 0
