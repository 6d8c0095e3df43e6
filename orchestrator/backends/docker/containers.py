"""Container helpers of the docker backend: paths and options every container shares, the
post-mortem of a (possibly dead) container, the thread that follows a container's log.
(Engine work run beside the attempt's next step is `orchestrator.in_thread.InThread`.)"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker

from orchestrator.backends.services import ServiceSpec
from orchestrator.errors import ContainerStartError, EngineError, Phase, PostMortem
from orchestrator.logs import get_logger

log = get_logger(__name__)

# A cancelled turn gets this long (s) between SIGTERM and SIGKILL (a budget's end gets kill_grace_s).
CANCEL_GRACE_S = 2
# The engine's StartedAt of a container whose process never started.
NEVER_STARTED = "0001-01-01T00:00:00Z"
# A start the engine refuses before the container's process ran is tried this often in all.
START_TRIES = 3
START_RETRY_PAUSE_S = 0.5

PYTHON = "/opt/venv/bin/python"
TURN_ENTRYPOINT = [PYTHON, "-m", "agent_sandbox.turn"]
NO_IPV6 = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}


def uid_gid(user: str) -> tuple[int, int]:
    """`"1000:1000"` -> (1000, 1000); a lone uid is also the gid."""
    uid, _, gid = user.partition(":")
    return int(uid), int(gid or uid)


def published_urls(container: Any, spec: ServiceSpec) -> dict[str, str]:
    """Listener -> `http://<host address>:<host port>` the engine bound for each published
    listener of a started container. Raises `ContainerStartError` if a binding is missing."""
    wanted = [li for li in spec.listeners if li.publish]
    if not wanted:
        return {}
    container.reload()
    bound = (container.attrs.get("NetworkSettings") or {}).get("Ports") or {}
    out: dict[str, str] = {}
    for li in wanted:
        hit = [b for b in bound.get(f"{li.port}/tcp") or [] if b.get("HostIp") == li.publish and b.get("HostPort")]
        if not hit:
            raise ContainerStartError(f"{spec.name}: the engine published no port {li.port} on {li.publish} "
                                      f"(bindings: {bound}); is its network internal?", phase=Phase.SERVICES)
        out[li.name] = f"http://{li.publish}:{hit[0]['HostPort']}"
    return out


def has_run(state: dict[str, Any]) -> bool:
    """Whether an engine's `State` of a container shows that its process started (it may have
    exited since): running now, or a real StartedAt."""
    return bool(state.get("Running")) or str(state.get("StartedAt") or NEVER_STARTED) != NEVER_STARTED


def start_container(container: Any, *, pause: Callable[[float], None] = time.sleep) -> int:
    """Start a created container; returns how many refused starts were tried again.

    Under load, the engine sometimes refuses a start with "cannot start a stopped process"
    (runc's init died before the process was released), although nothing of the container's own
    code ran: that start is tried again, up to START_TRIES in all. When the engine's state shows
    the process did start (it ran and exited before the engine answered), the start is done and
    the caller's wait reads its exit. Raises `docker.errors.DockerException` when every try was
    refused, or when the container cannot be inspected."""
    for n in range(START_TRIES):
        try:
            container.start()
            return n
        except docker.errors.APIError as exc:
            container.reload()
            if has_run(container.attrs.get("State") or {}):
                return n
            if n + 1 == START_TRIES:
                raise
            log.warning("container_start_refused_retrying", container=getattr(container, "name", "?"), error=str(exc))
            pause(START_RETRY_PAUSE_S)
    raise AssertionError("unreachable")  # the loop returns or raises


def engine_error(what: str, phase: Phase) -> Callable[[Exception], EngineError]:
    """A converter from an engine client exception to an `EngineError` saying what failed."""
    def wrap(exc: Exception) -> EngineError:
        return EngineError(f"{what}: {type(exc).__name__}: {exc}", phase=phase)

    return wrap


def post_mortem_of(container: Any, tail: int = 60) -> PostMortem:
    """Inspect a (possibly dead) container; never raises."""
    name = getattr(container, "name", "?")
    try:
        container.reload()
        state = container.attrs.get("State", {})
        logs = container.logs(tail=tail).decode("utf-8", "replace")
        return PostMortem(
            name=name,
            status=state.get("Status"),
            exit_code=state.get("ExitCode"),
            oom_killed=state.get("OOMKilled"),
            error=state.get("Error") or None,
            last_logs=logs,
        )
    except Exception as exc:  # noqa: BLE001 — a post-mortem reports, it does not fail
        return PostMortem(name=name, error=f"inspect failed: {exc}")


class LogFollower(threading.Thread):
    """Appends a container's log stream to a host file until the container stops.

    With `watch_ready`, `ready` is set once the output holds a ready line (a JSON object with
    `"event": "ready"`, services.py) or the stream ended (the container exited, or the engine
    closed the stream): a service's health wait sleeps on it instead of probing (base.py). The
    engine's json-file log driver cuts the output into lines per stream and sends each as one
    frame, so a line is never split by the other stream's output."""

    def __init__(self, container: Any, path: Path, *, watch_ready: bool = False):
        super().__init__(name=f"logs-{container.name}", daemon=True)
        self.container, self.path = container, path
        self.ready = threading.Event()
        self.saw_ready_line = False
        self._watch = watch_ready
        self._partial = b""

    def _scan(self, chunk: bytes) -> None:
        """Look for the ready line in what came so far (whole lines only)."""
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        if len(self._partial) > 65536:  # a line that long is no ready line: stop carrying it
            self._partial = b""
        for line in lines:
            if b'"ready"' not in line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and msg.get("event") == "ready":
                self.saw_ready_line, self._watch = True, False
                self.ready.set()
                return

    def run(self) -> None:
        try:
            with open(self.path, "ab") as fh:
                for chunk in self.container.logs(stream=True, follow=True, stdout=True, stderr=True):
                    fh.write(chunk)
                    fh.flush()
                    if self._watch:
                        self._scan(chunk)
        except Exception as exc:  # noqa: BLE001 — the container went away; logs are best effort
            log.debug("log_follower_ended", container=self.container.name, error=str(exc))
        finally:
            self.ready.set()  # the output ended: whoever waits looks at the container itself


class EventRecorder(threading.Thread):
    """The engine's events of one container, recorded from before its start until closed.

    The engine keeps only its last 256 events: on a busy engine, asking after a container died
    can find none of its events, and a kill through the engine would then read as the agent's
    doing. Subscribed at construction (before the container starts), so nothing is missed."""

    def __init__(self, client: Any, container_id: str, name: str):
        super().__init__(name=f"events-{name}", daemon=True)
        self._stream = client.events(filters={"container": container_id}, decode=True)
        self._events: list[dict[str, Any]] = []
        self._cond = threading.Condition()

    def run(self) -> None:
        try:
            for ev in self._stream:
                with self._cond:
                    self._events.append(ev)
                    self._cond.notify_all()
        except Exception as exc:  # noqa: BLE001 — closed, or the engine went away: what came is kept
            log.debug("event_recorder_ended", name=self.name, error=str(exc))

    def seen(self, *, until_action: str | None = None, timeout_s: float = 0.0) -> list[dict[str, Any]]:
        """The events so far; with `until_action`, first wait up to `timeout_s` for one of it
        (a death's "die" reaches the stream a moment after the engine shows the container exited)."""
        with self._cond:
            if until_action is not None:
                self._cond.wait_for(lambda: any(e.get("Action") == until_action for e in self._events), timeout_s)
            return list(self._events)

    def close(self) -> None:
        try:
            self._stream.close()
        except Exception as exc:  # noqa: BLE001 — already closed
            log.debug("event_recorder_close_failed", name=self.name, error=str(exc))


def merge_events(*lists: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Engine events from several sources, each once, in time order."""
    seen: dict[tuple[Any, Any, Any], dict[str, Any]] = {}
    for evs in lists:
        for e in evs:
            seen.setdefault((e.get("timeNano") or e.get("time"), e.get("Action"), e.get("id")), e)
    return sorted(seen.values(), key=lambda e: e.get("timeNano") or e.get("time") or 0)


def hardening(limits: Any, user: str, *, init: bool) -> dict[str, Any]:
    """Container options shared by the service and agent containers: read-only root, no
    capabilities, no new privileges, and the memory (no swap on top), CPU and pid limits."""
    return dict(
        user=user,
        read_only=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges:true"],
        mem_limit=limits.memory_bytes,
        memswap_limit=limits.memory_bytes,
        nano_cpus=int(limits.cpus * 1e9),
        pids_limit=limits.pids,
        init=init,
        ipc_mode="private",
    )
