"""A request rate limit shared by the threads of one client (``llm.client.requests_per_minute``).

API providers cap requests per minute; a run over many questions with ``max_concurrency``
threads would otherwise send them in bursts and collect HTTP 429s. :class:`RateLimiter`
spaces request starts: the k-th request (in the order threads ask) starts no earlier than
``first + k * 60 / rpm`` seconds, or ``interval`` after the previous one when the client
was idle for a while (no burst is saved up). Together with the client's bound on requests in
flight this gives a bounded, paced pool: at most ``max_concurrency`` requests open at once and
at most ``requests_per_minute`` begun per minute.

    limiter = RateLimiter(120)      # 2 requests / s
    limiter.acquire()               # blocks until this request may start; returns the wait
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["RateLimiter"]


class RateLimiter:
    """Space request starts at least ``60 / requests_per_minute`` seconds apart (thread-safe).

    Args:
        requests_per_minute: the most requests begun per minute (> 0).
        clock: monotonic clock in seconds (injectable for tests).
        sleep: sleep function in seconds (injectable for tests).
    """

    def __init__(
        self,
        requests_per_minute: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if isinstance(requests_per_minute, bool) or not requests_per_minute > 0:
            raise ValueError(
                f"requests_per_minute={requests_per_minute!r}; expected a number > 0 or null "
                "(no limit)"
            )
        self.requests_per_minute = float(requests_per_minute)
        self.interval = 60.0 / self.requests_per_minute
        self._clock = clock
        self._sleep = sleep
        self._next = float("-inf")  # earliest start of the next request
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Wait until the next request may start; returns the seconds waited."""
        with self._lock:  # reserve a start time; sleep outside the lock
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        wait = start - now
        if wait > 0:
            self._sleep(wait)
        return wait

    def __repr__(self) -> str:
        return f"RateLimiter(requests_per_minute={self.requests_per_minute:g})"
