"""Sending one call upstream within the provider's limits (issue 42, item 4).

`send_admitted` takes a lease from the limiter (queueing the call until the declared limits have
room), sends the call, and when the provider still answers "not now" (429, 529 overloaded, 503)
waits as the retry policy says (its Retry-After honoured, capped), tells the limiter to pause
every attempt's calls for as long, and sends again. What the call waited is written on its
usage-log row (`queued_s`, `throttled_s`, `retries`); the attempt's wait clock (wait_clock.py)
runs while it waits. After the last retry the provider's own answer is passed to the agent.

The token estimate a call is queued with is its request size (4 bytes a token) plus the output
it asks for (capped at 4,096): the provider's own estimators count the same two. The lease is
given back with what the provider reported, so the window holds real figures.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import httpx

from .limiter import Lease
from .limiter_service import LimiterClient, LimiterUnavailable, LocalLimiter, RemoteLimiter
from .limits import RETRY_STATUSES, RetryPolicy, parse_retry_after
from .metering import UsageRow
from .wait_clock import WaitClock

if TYPE_CHECKING:
    from .config import GatewayConfig, GatewaySecrets


class GatewayParts(Protocol):
    """What of the gateway's state a call needs (proxy.GatewayState has it)."""

    config: GatewayConfig
    limiter: LimiterClient | None
    wait_clock: WaitClock

    def http(self) -> httpx.AsyncClient: ...

OUTPUT_ESTIMATE_CAP = 4096
NO_RETRY = RetryPolicy(max_retries=0)  # no policy declared: the provider's answer passes as it is


def limiter_for(config: GatewayConfig, secrets: GatewaySecrets) -> LimiterClient | None:
    """The gateway's limiter: the campaign's service when named, else one in this process; None
    when no limit is declared."""
    if not config.limits:
        return None
    if config.limiter_url:
        if not secrets.limiter_token:
            raise ValueError("limiter_url needs limiter_token in the secrets")
        return RemoteLimiter(config.limiter_url, secrets.limiter_token, tuple(config.limits))
    from .limiter import Limiter

    return LocalLimiter(Limiter({str(k): v for k, v in config.limits.items()}))


def estimate_tokens(body: bytes) -> int:
    """A call's token estimate before it is sent: request bytes / 4 plus the output it asks for."""
    asked = 0
    try:
        doc = json.loads(body)
        if isinstance(doc, dict):
            for key in ("max_tokens", "max_output_tokens", "max_completion_tokens"):
                value = doc.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    asked = value
                    break
    except ValueError:
        pass
    return len(body) // 4 + min(asked, OUTPUT_ESTIMATE_CAP)


async def _release(limiter: LimiterClient, lease: Lease, tokens_used: int | None) -> None:
    try:
        await limiter.release(lease, tokens_used)
    except LimiterUnavailable:
        pass  # the service's lease expiry frees it


class Admitted:
    """A call being served: the upstream response; `done` ends it (gives the lease back)."""

    def __init__(self, response: httpx.Response, lease: Lease | None, limiter: LimiterClient | None,
                 clock: WaitClock) -> None:
        self.response = response
        self._lease = lease
        self._limiter = limiter
        self._clock: WaitClock | None = clock

    async def done(self, tokens_used: int | None) -> None:
        """The call is over: stop the serving count, give the lease back with what the provider
        reported (None: unknown). Idempotent."""
        if self._clock is not None:
            self._clock.change(serving=-1)
            self._clock = None
        if self._lease is not None and self._limiter is not None:
            lease, self._lease = self._lease, None
            await _release(self._limiter, lease, tokens_used)


async def send_admitted(state: GatewayParts, provider: str, make_request: Callable[[], httpx.Request],
                        row: UsageRow, body: bytes) -> Admitted:
    """Send the call within the limits and the retry policy. Raises httpx.HTTPError when the
    upstream cannot be reached, LimiterUnavailable when the limiter service cannot be."""
    limiter = state.limiter if state.limiter is not None and state.limiter.declares(provider) else None
    policy = state.config.retry or NO_RETRY
    clock = state.wait_clock
    estimate = estimate_tokens(body)
    loop = asyncio.get_running_loop()
    while True:
        lease = None
        if limiter is not None:
            t0 = loop.time()
            clock.change(waiting=1)
            try:
                lease = await limiter.acquire(provider, state.config.attempt_id, estimate)
            finally:
                clock.change(waiting=-1)
            row.queued_s = round(row.queued_s + (loop.time() - t0), 6)
        clock.change(serving=1)
        try:
            response = await state.http().send(make_request(), stream=True)
        except BaseException:
            clock.change(serving=-1)
            if lease is not None and limiter is not None:
                await _release(limiter, lease, 0)
            raise
        if response.status_code not in RETRY_STATUSES or row.retries >= policy.max_retries:
            return Admitted(response, lease, limiter, clock)
        wait = policy.wait_for(row.retries, parse_retry_after(response.headers.get("retry-after")))
        if row.throttled_s + wait > policy.total_wait_s:
            return Admitted(response, lease, limiter, clock)
        await response.aclose()
        clock.change(serving=-1)
        if lease is not None and limiter is not None:
            await _release(limiter, lease, 0)  # refused: no tokens spent
            await limiter.throttled(provider, wait)
        clock.change(waiting=1)
        try:
            await asyncio.sleep(wait)
        finally:
            clock.change(waiting=-1)
        row.throttled_s = round(row.throttled_s + wait, 6)
        row.retries += 1
