"""The request rate limit (lokg/llm/ratelimit.py) and its use by the chat client."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from lokg.llm.client import ChatClient
from lokg.llm.ratelimit import RateLimiter

MSG = [{"role": "user", "content": "capital of France?"}]


class FakeClock:
    """A clock that only moves when slept on (a test double for time.monotonic/sleep)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        with self._lock:
            self.slept.append(s)


def test_starts_are_spaced_by_sixty_over_rpm():
    fake = FakeClock()
    lim = RateLimiter(120, clock=fake.clock, sleep=fake.sleep)  # 0.5 s apart
    # four requests at the same instant: waits 0, 0.5, 1.0, 1.5 s
    assert [lim.acquire() for _ in range(4)] == [0.0, 0.5, 1.0, 1.5]
    assert fake.slept == [0.5, 1.0, 1.5]


def test_an_idle_client_saves_up_no_burst():
    fake = FakeClock()
    lim = RateLimiter(60, clock=fake.clock, sleep=fake.sleep)  # 1 s apart
    lim.acquire()
    fake.now += 10.0  # idle for 10 s: the next starts at once, the one after 1 s later
    assert lim.acquire() == 0.0
    assert lim.acquire() == 1.0


def test_threads_each_get_their_own_slot():
    fake = FakeClock()
    lim = RateLimiter(600, clock=fake.clock, sleep=fake.sleep)  # 0.1 s apart
    with ThreadPoolExecutor(8) as pool:
        waits = sorted(pool.map(lambda _: lim.acquire(), range(8)))
    assert waits == pytest.approx([0.1 * k for k in range(8)])


@pytest.mark.parametrize("bad", [0, -5, True, float("nan")])
def test_a_bad_rate_is_refused_in_one_line(bad):
    with pytest.raises(ValueError, match="requests_per_minute=.*expected a number > 0"):
        RateLimiter(bad)


def test_client_paces_every_http_attempt(scripted_server):
    """Each request, a retry included, takes its start from the limiter; cache hits none."""
    scripted_server.script = [("status", 500), ("ok", "Paris")]
    client = ChatClient(
        model="double-model", base_url=scripted_server.base_url, timeout_s=5,
        max_concurrency=4, requests_per_minute=1200, backoff_base_s=0.0, backoff_max_s=0.0,
    )  # fmt: skip
    fake = FakeClock()  # frozen clock: the k-th start waits k * 50 ms
    client.rate = RateLimiter(1200, clock=fake.clock, sleep=fake.sleep)
    assert client.chat(MSG).text == "Paris"  # one 500, then the answer: two attempts
    with ThreadPoolExecutor(4) as pool:
        texts = list(
            pool.map(lambda i: client.chat([{**MSG[0], "content": f"q{i}"}]).text, range(4))
        )
    assert texts == ["Paris"] * 4 and len(scripted_server.requests) == 6
    assert sorted(fake.slept) == pytest.approx([0.05 * k for k in range(1, 6)])
    assert ChatClient("m", None).rate is None  # null: no limit
