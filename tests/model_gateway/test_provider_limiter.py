"""The shared limiter's core (model_gateway.limiter): requests, tokens and streams within the
declared limits, a provider's pause, and per-attempt fairness in the queue (a flood from one
attempt never holds another back beyond its round-robin turn). Windows are shortened to a
fraction of a second here; the gateway tests use the real minute."""
from __future__ import annotations

import asyncio
import time

import pytest

from model_gateway.limiter import Limiter
from model_gateway.limits import ProviderLimits, RetryPolicy, parse_retry_after


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


async def grant_times(limiter: Limiter, calls: list[tuple[str, int]], hold_s: float = 0.0) -> list[tuple[str, float]]:
    """Fire every call at once; (attempt, seconds until granted) in grant order."""
    t0 = time.monotonic()
    order: list[tuple[str, float]] = []

    async def one(attempt: str, tokens: int) -> None:
        lease = await limiter.acquire("anthropic", attempt, tokens)
        order.append((attempt, time.monotonic() - t0))
        await asyncio.sleep(hold_s)
        limiter.release(lease, None)

    await asyncio.gather(*(one(a, t) for a, t in calls))
    return order


def test_requests_per_window_queue_beyond_the_limit_and_never_exceed_it() -> None:
    limiter = Limiter({"anthropic": ProviderLimits(requests_per_minute=3)}, window_s=0.6)
    order = run(grant_times(limiter, [("a", 0)] * 7))
    times = [t for _, t in order]
    assert len(times) == 7
    assert all(t < 0.2 for t in times[:3])  # the first three at once
    assert all(0.55 <= t < 0.9 for t in times[3:6])  # the next three when the window frees them
    assert times[6] >= 1.15
    for i in range(len(times)):  # no 0.6 s window ever holds more than three grants
        assert sum(1 for t in times if times[i] <= t < times[i] + 0.59) <= 3


def test_tokens_per_window_use_the_reported_figure_once_a_lease_is_back() -> None:
    async def scenario() -> tuple[float, float]:
        limiter = Limiter({"anthropic": ProviderLimits(tokens_per_minute=1000)}, window_s=0.8)
        t0 = time.monotonic()
        first = await limiter.acquire("anthropic", "a", 900)
        limiter.release(first, 100)  # it used 100, not 900: room for 900 more now
        await limiter.acquire("anthropic", "a", 800)
        quick = time.monotonic() - t0
        await limiter.acquire("anthropic", "a", 500)  # 900 in the window: waits for it to slide
        return quick, time.monotonic() - t0

    quick, slow = run(scenario())
    assert quick < 0.2
    assert slow >= 0.75


def test_concurrent_streams_are_bounded_and_released() -> None:
    limiter = Limiter({"anthropic": ProviderLimits(concurrent_streams=2)})
    order = run(grant_times(limiter, [("a", 0)] * 6, hold_s=0.3))
    times = sorted(t for _, t in order)
    assert times[1] < 0.1 and 0.28 <= times[2] < 0.5 and 0.58 <= times[4] < 0.8


def test_a_flood_from_one_attempt_does_not_starve_the_others() -> None:
    """Attempt `flood` queues 30 calls before `b` and `c` ask once each: with one stream, `b` and
    `c` are served in the next round, not after the flood."""
    async def scenario() -> list[str]:
        limiter = Limiter({"anthropic": ProviderLimits(concurrent_streams=1)})
        order: list[str] = []

        async def one(attempt: str) -> None:
            lease = await limiter.acquire("anthropic", attempt, 0)
            order.append(attempt)
            await asyncio.sleep(0.01)
            limiter.release(lease, None)

        flood = [asyncio.create_task(one("flood")) for _ in range(30)]
        await asyncio.sleep(0.05)  # the flood is queued first
        others = [asyncio.create_task(one("b")), asyncio.create_task(one("c"))]
        await asyncio.gather(*flood, *others)
        return order

    order = run(scenario())
    assert order.count("flood") == 30
    assert order.index("b") <= 8 and order.index("c") <= 9  # a round of the flood, then each of them
    # and beyond it: under a rate, fair shares are equal while everyone waits
    limiter = Limiter({"anthropic": ProviderLimits(requests_per_minute=4)}, window_s=0.4)
    grants = run(grant_times(limiter, [("flood", 0)] * 24 + [("b", 0)] * 4 + [("c", 0)] * 4))
    first_twelve = [a for a, _ in grants[:12]]
    assert first_twelve.count("b") == 4 and first_twelve.count("c") == 4


def test_a_provider_pause_holds_every_attempt() -> None:
    async def scenario() -> float:
        limiter = Limiter({"anthropic": ProviderLimits(requests_per_minute=100)})
        limiter.throttled("anthropic", 0.5)
        t0 = time.monotonic()
        await limiter.acquire("anthropic", "other", 0)
        return time.monotonic() - t0

    assert 0.45 <= run(scenario()) < 0.9


def test_an_abandoned_call_gives_up_its_place() -> None:
    async def scenario() -> list[str]:
        limiter = Limiter({"anthropic": ProviderLimits(concurrent_streams=1)})
        held = await limiter.acquire("anthropic", "a", 0)
        gone = asyncio.create_task(limiter.acquire("anthropic", "gone", 0))
        waiting = asyncio.create_task(limiter.acquire("anthropic", "b", 0))
        await asyncio.sleep(0.05)
        gone.cancel()
        limiter.release(held, None)
        lease = await asyncio.wait_for(waiting, 2)
        return [lease.attempt, str(limiter.stats()["anthropic"]["active"])]

    assert run(scenario()) == ["b", "1"]


def test_undeclared_providers_pass_without_waiting() -> None:
    limiter = Limiter({"anthropic": ProviderLimits(concurrent_streams=1)})

    async def five() -> list[float]:
        return [lease.waited_s for lease in await asyncio.gather(*(limiter.acquire("openai", "a", 0) for _ in range(5)))]

    assert run(five()) == [0.0] * 5 and not limiter.declares("openai")


@pytest.mark.parametrize(("header", "retry", "expected"), [
    ("2", 0, 2.0), ("0.5", 3, 0.5), ("120", 0, 60.0),  # Retry-After honoured, capped at max_wait_s
    (None, 0, 1.0), (None, 2, 4.0), (None, 9, 60.0),  # exponential back-off without it, capped
    ("Wed, 21 Oct 2026 07:28:00 GMT", 1, 2.0), ("-3", 0, 1.0), ("nan", 0, 1.0),  # unusable: back-off
])
def test_the_retry_policy_waits(header: str | None, retry: int, expected: float) -> None:
    assert RetryPolicy().wait_for(retry, parse_retry_after(header)) == expected
