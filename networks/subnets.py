"""Explicit subnet allocation from a configured range.

The engine's default address pools run out after about 30 networks; each attempt needs two.
So the runtime carves `subnet_range` (e.g. 10.231.0.0/16) into blocks of `/prefix` (e.g. /28:
4096 blocks, 2048 attempts) and asks the engine for a network with an explicit subnet.

Allocation is safe against concurrent orchestrators without any shared lock file: the engine
itself refuses a subnet that overlaps an existing network ("Pool overlaps with other one on this
address space"); `allocate` treats that refusal as "taken" and tries the next block. Within one
process a lock and a reserved set avoid needless collisions between threads.
"""
from __future__ import annotations

import ipaddress
import random
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

_OVERLAP_MARKERS = ("overlaps", "overlap with", "pool overlaps", "already in use", "conflicts with")


class SubnetsExhausted(RuntimeError):
    """Every block of the range is taken (by this engine or by a concurrent allocation)."""


class SubnetTaken(Exception):
    """Raised by a `create` callback when the engine says the subnet is in use."""


def is_overlap_error(exc: BaseException) -> bool:
    """True when an engine error means 'this subnet overlaps an existing network'."""
    text = str(getattr(exc, "explanation", "") or exc).lower()
    return any(marker in text for marker in _OVERLAP_MARKERS)


@dataclass(frozen=True)
class Block:
    """One subnet with the addresses the topology uses inside it."""

    network: ipaddress.IPv4Network

    @property
    def subnet(self) -> str:
        return str(self.network)

    @property
    def gateway(self) -> str:
        """The engine's gateway slot (.1); on an inhibit_ipv4 bridge no interface holds it."""
        return str(self.network.network_address + 1)

    def host(self, offset: int) -> str:
        """Address `offset` inside the block (2 = ERP, 3 = gateway, by topology.yaml)."""
        if not 1 < offset < self.network.num_addresses - 1:
            raise ValueError(f"offset {offset} outside {self.network}")
        return str(self.network.network_address + offset)

    @property
    def ip_range(self) -> str:
        """Where the engine picks dynamic addresses: the upper half, clear of fixed offsets."""
        half = self.network.prefixlen + 1
        return str(list(self.network.subnets(new_prefix=half))[1])


class SubnetPool:
    """Blocks of `/prefix` inside `range_cidr`, handed out one at a time."""

    def __init__(self, range_cidr: str, prefix: int, *, rng: random.Random | None = None):
        try:
            self.range = ipaddress.IPv4Network(range_cidr, strict=True)
        except ValueError as exc:
            raise ValueError(f"subnet range {range_cidr!r} is not an IPv4 network: {exc}") from None
        if prefix < self.range.prefixlen:
            raise ValueError(f"/{prefix} blocks do not fit in {range_cidr}")
        self.prefix = prefix
        self.count = 2 ** (prefix - self.range.prefixlen)
        self._lock = threading.Lock()
        self._reserved: set[int] = set()
        self._rng = rng or random.Random()

    def block(self, index: int) -> Block:
        size = 2 ** (32 - self.prefix)
        return Block(ipaddress.IPv4Network(f"{self.range.network_address + index * size}/{self.prefix}"))

    def index_of(self, cidr: str) -> int | None:
        """Index of the block equal to `cidr` (None if it is not one of ours)."""
        net = ipaddress.ip_network(cidr, strict=False)
        if not isinstance(net, ipaddress.IPv4Network) or not net.subnet_of(self.range) or net.prefixlen != self.prefix:
            return None
        return (int(net.network_address) - int(self.range.network_address)) // 2 ** (32 - self.prefix)

    def candidates(self, used: Iterable[str] = ()) -> Iterator[int]:
        """Free block indexes in probing order.

        Start at a random index so concurrent orchestrators rarely race for the same block,
        then walk the range once. Blocks that overlap any network in `used` are skipped.
        """
        used_nets = [ipaddress.ip_network(u, strict=False) for u in used]
        used_nets = [u for u in used_nets if u.version == 4]
        start = self._rng.randrange(self.count)
        for i in range(self.count):
            index = (start + i) % self.count
            net = self.block(index).network
            if any(net.overlaps(u) for u in used_nets):
                continue
            yield index

    def allocate(self, create: Callable[[Block], T], used: Iterable[str] = ()) -> tuple[Block, T]:
        """Call `create(block)` on free blocks until one succeeds; return the block and its result.

        `create` raises `SubnetTaken` (or an engine error `is_overlap_error` recognises) when the
        engine refuses the subnet; any other exception propagates.
        """
        for index in self.candidates(used):
            with self._lock:
                if index in self._reserved:
                    continue
                self._reserved.add(index)
            block = self.block(index)
            try:
                return block, create(block)
            except SubnetTaken:
                pass
            except Exception as exc:  # noqa: BLE001 — engine errors come in many types
                if not is_overlap_error(exc):
                    with self._lock:
                        self._reserved.discard(index)
                    raise
            with self._lock:
                self._reserved.discard(index)
        raise SubnetsExhausted(f"no free /{self.prefix} left in {self.range}")

    def release(self, block: Block) -> None:
        """Forget an in-process reservation (the engine's network removal frees the block)."""
        index = self.index_of(block.subnet)
        if index is None:
            return
        with self._lock:
            self._reserved.discard(index)
