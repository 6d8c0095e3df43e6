"""A process-wide limit on concurrent Docker Engine API requests made by the docker backend.

The campaign's `EngineLimits` (orchestrator/campaign/limits.py) bound whole phases (setup,
teardown) of attempts. This module bounds the individual HTTP requests underneath, so that however
many attempts are in flight, the engine never sees more than `RuntimeConfig.docker_api_slots`
ordinary requests at once from this process.

How it is applied: the docker SDK's low-level `APIClient` is a `requests.Session`, and every API
call goes through `Session.send`. `limit_client()` replaces `send` on that one client instance
(an instance attribute shadowing the class method; `Session.request` calls `self.send`) with a
wrapper that takes a slot before sending and gives it back when the response headers have
arrived (for non-streamed requests `send` has read the whole body by then). Streamed bodies
(archives, log streams) are read after the slot is released: the engine has done its work by
the time it sends headers. Wrapping is idempotent, so a client shared by several backends
(the tests do that) is wrapped once.

Requests fall into three lanes, decided from the method and URL alone (`classify`):

- bypass: calls that block for as long as something else runs: container wait, attach, logs
  with follow, events, streamed stats, exec start, and image builds/loads. A slot held while
  blocking would be a slot lost for the whole turn: N agents waiting on their turns would take
  every slot and starve setup and teardown. They cost the engine nothing while they wait, so
  they are not counted. (Image builds run once, before attempts start, under the image
  builder's own control.)
- teardown: DELETE requests (remove container / volume / network) and container stop / kill.
  They have their own slots (`docker_api_teardown_slots`), separate from the general ones, so a
  burst of setups can never block a teardown: teardown always progresses, and it is still bounded.
- general: everything else, bounded by `docker_api_slots`.

Every wait for a slot is bounded by the client's own timeout (`RuntimeConfig.docker_api_timeout_s`):
a request that cannot get a slot in that time fails as `ApiSlotTimeout`, a `DockerException`, so
callers report it as the engine error it is.

The limiter is process-wide: `process_limiter(general, teardown)` returns one shared instance per
slot configuration, so every backend built from the same config shares one set of slots.
"""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import docker.errors

Lane = Literal["bypass", "teardown", "general"]

# Paths after the optional "/v1.41" version prefix.
_VERSION = re.compile(r"^/v\d+(?:\.\d+)?(?=/)")
_CONTAINER_OP = re.compile(r"^/containers/[^/]+/(?P<op>[a-z]+)(?:/(?P<sub>[a-z]+))?$")
_FALSE = {"0", "false", "False", ""}


class ApiSlotTimeout(docker.errors.DockerException):
    """No Docker API slot became free within the client's timeout."""


def _flag(query: dict[str, list[str]], name: str, default: bool) -> bool:
    values = query.get(name)
    if not values:
        return default
    return values[-1] not in _FALSE


def classify(method: str, url: str) -> Lane:
    """Which lane a request to the Engine API takes (see the module docstring for why)."""
    method = method.upper()
    parts = urlsplit(url)
    path = _VERSION.sub("", parts.path)
    query = parse_qs(parts.query, keep_blank_values=True)
    if path == "/events" or path in ("/build", "/images/load"):
        return "bypass"
    if re.fullmatch(r"/exec/[^/]+/start", path):
        return "bypass"  # blocks until the exec'd process ends (unless detached; not used here)
    m = _CONTAINER_OP.match(path)
    if m:
        op, sub = m.group("op"), m.group("sub")
        if op == "wait" or op == "attach":  # attach and attach/ws
            return "bypass"
        if op == "logs" and sub is None and _flag(query, "follow", False):
            return "bypass"
        if op == "stats" and sub is None and _flag(query, "stream", True):
            return "bypass"
        if method == "POST" and op in ("stop", "kill") and sub is None:
            return "teardown"
    if method == "DELETE":
        return "teardown"
    return "general"


@dataclass
class DockerApiLimiter:
    """Bounded semaphores for the general and teardown lanes, and counters for tests and benches."""

    general_slots: int
    teardown_slots: int
    general: threading.BoundedSemaphore = field(init=False, repr=False)
    teardown: threading.BoundedSemaphore = field(init=False, repr=False)
    in_flight: dict[str, int] = field(default_factory=lambda: {"general": 0, "teardown": 0, "bypass": 0})
    peak: dict[str, int] = field(default_factory=lambda: {"general": 0, "teardown": 0, "bypass": 0})
    waited_s: dict[str, float] = field(default_factory=lambda: {"general": 0.0, "teardown": 0.0})
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if self.general_slots < 1 or self.teardown_slots < 1:
            raise ValueError("docker API limits need at least one slot per lane")
        self.general = threading.BoundedSemaphore(self.general_slots)
        self.teardown = threading.BoundedSemaphore(self.teardown_slots)

    def _count(self, lane: str, delta: int) -> None:
        with self._lock:
            self.in_flight[lane] += delta
            self.peak[lane] = max(self.peak[lane], self.in_flight[lane])

    def call(self, lane: Lane, fn: Callable[[], Any], timeout_s: float | None = None) -> Any:
        """Run `fn` holding a slot of `lane` (none for bypass); wait at most `timeout_s` for it."""
        if lane == "bypass":
            self._count(lane, 1)
            try:
                return fn()
            finally:
                self._count(lane, -1)
        sem: threading.BoundedSemaphore = getattr(self, lane)
        t0 = time.monotonic()
        if not sem.acquire(timeout=timeout_s):
            raise ApiSlotTimeout(
                f"no free docker API slot ({lane} lane, {getattr(self, lane + '_slots')} slots) within {timeout_s:g}s"
            )
        with self._lock:
            self.waited_s[lane] += time.monotonic() - t0
        self._count(lane, 1)
        try:
            return fn()
        finally:
            self._count(lane, -1)
            sem.release()

    def wrap_send(self, send: Callable[..., Any], timeout_s: float | None = None) -> Callable[..., Any]:
        """A `requests.Session.send` replacement that applies the limit to each request."""

        def limited_send(request: Any, **kwargs: Any) -> Any:
            lane = classify(request.method or "GET", request.url or "")
            return self.call(lane, lambda: send(request, **kwargs), timeout_s)

        limited_send.__wrapped__ = send  # type: ignore[attr-defined]
        return limited_send


_registry: dict[tuple[int, int], DockerApiLimiter] = {}
_registry_lock = threading.Lock()


def process_limiter(general_slots: int, teardown_slots: int) -> DockerApiLimiter:
    """The process-wide limiter for this slot configuration (created on first use)."""
    with _registry_lock:
        key = (general_slots, teardown_slots)
        if key not in _registry:
            _registry[key] = DockerApiLimiter(general_slots, teardown_slots)
        return _registry[key]


def limit_client(client: Any, limiter: DockerApiLimiter, timeout_s: float | None = None) -> Any:
    """Apply `limiter` to every request of `client` (a `docker.DockerClient` or an `APIClient`).

    Replaces `send` on that client instance only. Calling it again on the same client swaps the
    limiter instead of wrapping twice. Returns the client.
    """
    api = getattr(client, "api", client)
    original = getattr(api, "_pb_unlimited_send", None)
    if original is None:
        original = api.send
        api._pb_unlimited_send = original
    api.send = limiter.wrap_send(original, timeout_s)
    api._pb_api_limiter = limiter
    return client
