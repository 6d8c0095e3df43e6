"""The shared limiter: calls to a provider are queued until the declared limits have room.

One `Limiter` holds, per provider, the calls granted in the last 60 s (requests and tokens), the
calls in flight (concurrent streams) and a pause the provider asked for (a 429's Retry-After).
A call asks `acquire(provider, attempt, tokens)` and gets a `Lease` once there is room; it gives
it back with `release(lease, tokens_used)` (the estimate is replaced by what the provider
reported, so the tokens window holds real figures).

Windows are sliding (at most N grants in any 60 s), not token buckets: a sliding window never
exceeds a bucket's allowance, so a provider enforcing either is never asked for more. A grant
holds its place for 62 s, not 60: the provider counts a call when it arrives, a little after
the grant, and under load two calls' delays differ by up to a second or so; the margin keeps the
provider's own window from seeing N+1 (about 3% of the declared rate).

Fairness: each attempt has its own FIFO queue, and room is handed out round-robin over the
attempts that wait, so an attempt that floods the limiter waits behind its own calls while
every other attempt still gets its turn: a flood takes at most one grant per round.

The limiter runs in one process (the campaign head's limiter service, model_gateway.limiter_service,
consulted over HTTP by every gateway; or inside one gateway when no service is given).
"""
from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .limits import ProviderLimits

WINDOW_S = 60.0
WINDOW_MARGIN = 2.0 / 60.0  # of the window: the arrival-time jitter the provider's count may see


@dataclass
class Lease:
    """Room for one call: given back with `Limiter.release`."""

    id: int
    provider: str
    attempt: str
    tokens: int
    granted_at: float
    waited_s: float


@dataclass
class _Waiter:
    future: asyncio.Future[Lease]
    tokens: int
    since: float
    grants_before: int  # the provider's grant count when the call joined the line


@dataclass
class _Provider:
    limits: ProviderLimits
    grants: deque[list[float]] = field(default_factory=deque)  # [time, tokens] of the last window
    active: dict[int, Lease] = field(default_factory=dict)
    paused_until: float = 0.0
    queues: OrderedDict[str, deque[_Waiter]] = field(default_factory=OrderedDict)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    granted: dict[str, int] = field(default_factory=dict)  # grants per attempt (stats)
    waited_s: dict[str, float] = field(default_factory=dict)  # queued time per attempt (stats)
    # Per attempt, the most grants made while one of its calls waited: fairness, as the queue saw it.
    overtaken: dict[str, int] = field(default_factory=dict)
    total: int = 0


class Limiter:
    """Queues calls per provider within its declared limits, fairly across attempts."""

    def __init__(self, limits: dict[str, ProviderLimits], *, clock: Callable[[], float] = time.monotonic,
                 lease_ttl_s: float = 900.0, window_s: float = WINDOW_S) -> None:
        self.clock = clock
        # The "minute" (shorter only in the limiter's own unit tests), with the margin.
        self.window_s = window_s * (1.0 + WINDOW_MARGIN)
        # A lease never given back (its gateway died) frees its stream after this long.
        self.lease_ttl_s = lease_ttl_s
        self._providers = {name: _Provider(lim) for name, lim in limits.items()}
        self._ids = itertools.count(1)
        self._leases: dict[int, Lease] = {}
        self._entries: dict[int, list[float]] = {}  # a lease's [time, tokens] in its window

    def declares(self, provider: str) -> bool:
        """Whether `provider` has declared limits (others pass without a lease)."""
        return provider in self._providers

    async def acquire(self, provider: str, attempt: str, tokens: int = 0) -> Lease:
        """Wait for room for one call of `attempt` estimated at `tokens`; the lease to give back."""
        p = self._providers.get(provider)
        now = self.clock()
        if p is None:
            return Lease(next(self._ids), provider, attempt, tokens, now, 0.0)
        cap = p.limits.tokens_per_minute
        if cap is not None:
            tokens = min(tokens, cap)  # a call bigger than the window still gets through, alone
        waiter = _Waiter(asyncio.get_running_loop().create_future(), max(0, tokens), now, p.total)
        p.queues.setdefault(attempt, deque()).append(waiter)
        if p.task is None or p.task.done():
            p.task = asyncio.create_task(self._dispatch(provider, p))
        p.wake.set()
        try:
            return await waiter.future
        except asyncio.CancelledError:
            if waiter.future.done() and not waiter.future.cancelled():
                self.release(waiter.future.result(), None)  # granted as the caller went away
            raise

    def release(self, lease: Lease, tokens_used: int | None) -> None:
        """Give a lease back; `tokens_used` (when known) replaces its estimate in the window."""
        p = self._providers.get(lease.provider)
        if p is None or self._leases.pop(lease.id, None) is None:
            return
        p.active.pop(lease.id, None)
        entry = self._entries.pop(lease.id, None)
        if tokens_used is not None and entry is not None:
            entry[1] = max(0, tokens_used)
        p.wake.set()

    def throttled(self, provider: str, pause_s: float) -> None:
        """The provider answered "not now": grant nothing more for `pause_s`."""
        p = self._providers.get(provider)
        if p is None:
            return
        p.paused_until = max(p.paused_until, self.clock() + max(0.0, pause_s))
        p.wake.set()

    def stats(self) -> dict[str, dict[str, object]]:
        """Per provider: grants, queued seconds and the most grants made while one of its calls
        waited (`overtaken`), per attempt; calls waiting and in flight."""
        return {name: {"granted": dict(p.granted), "waited_s": {k: round(v, 3) for k, v in p.waited_s.items()},
                       "overtaken": dict(p.overtaken),
                       "waiting": sum(len(q) for q in p.queues.values()), "active": len(p.active)}
                for name, p in self._providers.items()}

    # -- the dispatcher of one provider
    def _room_in(self, p: _Provider, tokens: int, now: float) -> float:
        """0 when a call of `tokens` fits now; else seconds until it may (inf: after a release)."""
        while p.grants and p.grants[0][0] <= now - self.window_s:
            p.grants.popleft()
        for lease in [lease for lease in p.active.values() if lease.granted_at < now - self.lease_ttl_s]:
            p.active.pop(lease.id, None)
            self._leases.pop(lease.id, None)
            self._entries.pop(lease.id, None)
        waits = [p.paused_until - now]
        lim = p.limits
        if lim.concurrent_streams is not None and len(p.active) >= lim.concurrent_streams:
            waits.append(float("inf"))
        if lim.requests_per_minute is not None and len(p.grants) >= lim.requests_per_minute:
            waits.append(p.grants[len(p.grants) - lim.requests_per_minute][0] + self.window_s - now)
        if lim.tokens_per_minute is not None:
            used = sum(int(t) for _, t in p.grants)
            excess = used + tokens - lim.tokens_per_minute
            if excess > 0:
                freed = 0
                for when, spent in p.grants:  # the window frees its oldest grants first
                    freed += int(spent)
                    if freed >= excess:
                        waits.append(when + self.window_s - now)
                        break
                else:
                    waits.append(float("inf"))
        return max(0.0, *waits)

    def _next(self, p: _Provider) -> tuple[str, _Waiter] | None:
        """The head of the next attempt's queue in round-robin order (dropping abandoned calls)."""
        while p.queues:
            attempt, queue = next(iter(p.queues.items()))
            while queue and queue[0].future.done():
                queue.popleft()
            if not queue:
                del p.queues[attempt]
                continue
            return attempt, queue[0]
        return None

    async def _dispatch(self, name: str, p: _Provider) -> None:
        while True:
            p.wake.clear()
            head = self._next(p)
            if head is None:
                await p.wake.wait()
                continue
            attempt, waiter = head
            now = self.clock()
            delay = self._room_in(p, waiter.tokens, now)
            if delay > 0:
                try:
                    await asyncio.wait_for(p.wake.wait(), timeout=None if delay == float("inf") else delay)
                except TimeoutError:
                    pass
                continue
            queue = p.queues[attempt]
            queue.popleft()
            p.queues.move_to_end(attempt)  # round-robin: this attempt goes to the back of the line
            if not queue:
                del p.queues[attempt]
            lease = Lease(next(self._ids), name, attempt, waiter.tokens, now, now - waiter.since)
            entry = [now, float(waiter.tokens)]
            p.grants.append(entry)
            self._entries[lease.id] = entry
            p.active[lease.id] = lease
            self._leases[lease.id] = lease
            p.granted[attempt] = p.granted.get(attempt, 0) + 1
            p.waited_s[attempt] = p.waited_s.get(attempt, 0.0) + lease.waited_s
            p.overtaken[attempt] = max(p.overtaken.get(attempt, 0), p.total - waiter.grants_before)
            p.total += 1
            waiter.future.set_result(lease)
