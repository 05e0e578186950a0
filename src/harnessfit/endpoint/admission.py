"""Admission control for the endpoint server: a bounded number of chat requests in it at once (the built-in
backend asks for it; ``EndpointOptions.max_queue``).

The engine generates one request at a time and queues the rest; without a bound, 32 concurrent requests all
wait, the last is answered minutes later, and a client with a 60 s timeout fails while ``/health`` says ok. Past
``limit`` requests admitted (the one generating plus those waiting), a request is refused at once with HTTP 429
and a ``Retry-After`` estimated from how long recent requests took and how many are ahead; harnessfit's own chat
client respects it (``eval.client.chat``). Pi does not under the eval's settings: they turn its retries off (Pi
0.73.1's OpenAI SDK would retry twice, 0.82+ retry through their own provider setting, default 0), so a 429 ends
the turn with an error. An eval that starts its own server therefore admits at least as many requests as it runs
episodes at once (``eval.run.run_eval``); with ``--endpoint`` the server's queue must be at least ``--workers``.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from typing import Any

__all__ = ["Admission", "DEFAULT_MAX_QUEUE"]

DEFAULT_MAX_QUEUE = 16  # admitted at once: above any eval --workers / RL group this server is meant for


class Admission:
    """Counts admitted requests; ``enter`` admits or refuses, ``leave`` ends an admitted one."""

    def __init__(self, limit: int = DEFAULT_MAX_QUEUE) -> None:
        if limit < 1:
            raise ValueError(f"the queue limit must be at least 1 (got {limit})")
        self.limit = limit
        self.admitted = 0
        self.rejected = 0
        self._lock = threading.Lock()
        self._recent: deque[float] = deque(maxlen=16)  # seconds each recent request was in the server

    def enter(self) -> float | None:
        """The admission time, or None when the server is full (counted as rejected)."""
        with self._lock:
            if self.admitted >= self.limit:
                self.rejected += 1
                return None
            self.admitted += 1
            return time.monotonic()

    def leave(self, since: float) -> None:
        with self._lock:
            self.admitted = max(0, self.admitted - 1)
            self._recent.append(time.monotonic() - since)

    def retry_after(self) -> int:
        """Whole seconds until a place is likely free: a recent request's mean time in the server (which includes
        its wait) divided over the places, at least 1 and at most 60."""
        with self._lock:
            mean = sum(self._recent) / len(self._recent) if self._recent else 1.0
        return max(1, min(60, math.ceil(mean / self.limit)))

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {"admitted": self.admitted, "limit": self.limit, "rejected": self.rejected}
