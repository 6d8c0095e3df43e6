"""Single containers for integration tests, started through testcontainers.

The runtime starts an attempt's containers through its own backend (orchestrator/backends/);
tests that need just one container of an image use testcontainers' `DockerContainer` with a real
wait strategy. Every container and network carries the runtime's labels (so `orchestrate reap`
knows whose it is) and is removed when the `with` block ends. Ryuk is off (tests/conftest.py):
its image cannot be pulled here.

Published ports would open the container on host interfaces; instead the containers join a
network the test creates and are reached at their address on it (`NetworkHttpWait`).
"""
from __future__ import annotations

import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import WaitStrategy


def run_to_exit(image: str, argv: list[str], *, labels: dict[str, str], timeout_s: float = 60, **kwargs: Any) -> tuple[int, str]:
    """Run `argv` in a fresh container of `image` with no network; (exit code, stdout+stderr).
    The container is removed whatever happens."""
    container = DockerContainer(image).with_command(argv[1:]).with_kwargs(
        entrypoint=argv[:1], network_mode="none", labels=labels, **kwargs)
    try:
        container.start()
        code = container.get_wrapped_container().wait(timeout=timeout_s)["StatusCode"]
        out, err = container.get_logs()
        return code, (out + err).decode()
    finally:
        container.stop()


def address_on(container: DockerContainer, network: Network) -> str:
    """The container's IPv4 address on `network` (a network the test created)."""
    wrapped = container.get_wrapped_container()
    wrapped.reload()
    return str(wrapped.attrs["NetworkSettings"]["Networks"][network.name]["IPAddress"])


class NetworkHttpWait(WaitStrategy):
    """Ready when GET http://<address on network>:<port><path> answers `status`, polled until the
    startup timeout; fails at once if the container exits (its logs in the error)."""

    def __init__(self, network: Network, port: int, path: str, *, status: int = 200,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__()
        self.network, self.port, self.path, self.status = network, port, path, status
        self.headers = headers or {}

    def wait_until_ready(self, container: Any) -> None:
        deadline = time.monotonic() + self._startup_timeout
        last = "not probed"
        while time.monotonic() < deadline:
            container.reload()
            if container.status in ("exited", "dead"):
                out, err = container.get_logs()
                raise RuntimeError(f"container exited before it was ready: {(out + err).decode()[-2000:]}")
            url = f"http://{address_on(container, self.network)}:{self.port}{self.path}"
            request = urllib.request.Request(url, headers=self.headers)
            try:
                with urllib.request.urlopen(request, timeout=2) as response:  # noqa: S310 — a test container's address
                    if response.status == self.status:
                        return
                    last = f"status {response.status}"
            except urllib.error.HTTPError as exc:
                if exc.code == self.status:
                    return
                last = f"status {exc.code}"
            except OSError as exc:
                last = type(exc).__name__
            time.sleep(self._poll_interval)
        raise TimeoutError(f"{self.path} on port {self.port} not ready in {self._startup_timeout:g}s (last: {last})")


@contextmanager
def labelled_network(labels: dict[str, str]) -> Iterator[Network]:
    """A bridge network for one test, with the runtime's labels, removed afterwards."""
    network = Network(docker_network_kw={"labels": labels})
    network.name = f"pb-tc-{uuid.uuid4().hex[:8]}"  # the runtime's name prefix, not a bare uuid
    network.create()
    try:
        yield network
    finally:
        network.remove()
