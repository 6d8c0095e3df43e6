"""The agent turns of a docker attempt: each turn in a fresh container that joins the attempt's
network namespace, with the workspace volume and the turn's own quota volume (mounted at /turn).

A turn's quota volume lives while a container holds it mounted (volume_quota.py). A turn declared
at open (`AttemptContext.turns`) has its volume made with the agent side and held by its holder
(agent_holder.py) until the attempt's close. A turn that was not declared gets a volume and a
keeper of its own, an idle container without network that holds it from the files copied in to
the copy-out after the turn; these depend on nothing but the turn's number, so they are made
ahead of the turn (`prepare`): turn 1's beside the services' start, turn n+1's beside turn n's
run (`TurnLaunch.next_n`). Only the turn's own container (its files, environment and image are
the turn's) is made when the turn starts. After the copy-out, the turn's container (and keeper
and volume, where it has its own) are removed beside whatever comes next; the sandbox's close
waits for all of it.

The turns see the sandbox through a `TurnHost`: the few things of it they use, named (the engine
client, the attempt's containers and volumes, its labels, the agent's network namespace, the two
removals), so this module does not import the sandbox that imports it.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors
import requests.exceptions

from orchestrator.backends.base import TurnLaunch, TurnRun
from orchestrator.backends.docker.archives import Entry, build_tar, safe_extract, stream_file
from orchestrator.backends.docker.containers import (
    CANCEL_GRACE_S,
    TURN_ENTRYPOINT,
    LogFollower,
    engine_error,
    hardening,
    post_mortem_of,
    start_container,
    uid_gid,
)
from orchestrator.backends.docker.volume_quota import start_keeper, tmpfs_volume_options
from orchestrator.cancel_watch import CancelWatch
from orchestrator.config import RuntimeConfig
from orchestrator.errors import ContainerStartError, KeeperLost, Phase
from orchestrator.in_thread import InThread
from orchestrator.logs import get_logger

log = get_logger(__name__)


@dataclass(frozen=True)
class TurnHost:
    """What the turns use of their attempt's sandbox. `containers` and `volumes` are the
    sandbox's own dicts (role -> object): a turn's objects are entered there so that the
    sandbox's close removes whatever a turn left."""

    prefix: str                                  # name prefix of the attempt's engine objects
    client: Any                                  # docker.DockerClient
    config: RuntimeConfig
    # The default image of a turn, read when a turn is made (the backend resolves it in `prepare`).
    agent_image: Callable[[], str | None]
    has_init: bool                               # the engine runs docker-init in containers
    containers: dict[str, Any]
    volumes: dict[str, Any]
    labels: Callable[[str], dict[str, str]]      # role -> the attempt's labels
    agent_namespace: Callable[[], Any]           # the netns holder, once ready
    remove_container: Callable[[str], str | None]  # role -> problem or None
    remove_volume: Callable[[str], str | None]     # role -> problem or None
    # Turns whose volumes the agent side's holder keeps mounted (made at open, removed at close).
    held_turns: frozenset[int] = frozenset()


class DockerTurns:
    """Runs the turns of one attempt on docker (its containers and volumes are the sandbox's)."""

    def __init__(self, host: TurnHost) -> None:
        self.sb = host
        self._prepared: dict[int, InThread] = {}  # turn number -> its volume and keeper, being made
        self.removals: list[InThread] = []  # finished turns' containers and volume, going away

    def prepare(self, n: int) -> None:
        """Start making turn `n`'s quota volume and keeper in a thread (once per turn number;
        nothing for a turn whose volume the holder keeps)."""
        if n not in self._prepared and n not in self.sb.held_turns:
            self._prepared[n] = InThread(f"{self.sb.prefix}-t{n}-prepare", lambda: self._make_turn_volume(n), Phase.TURN)

    def _make_turn_volume(self, n: int) -> Any:
        """Turn `n`'s quota volume, held mounted by its started keeper; returns the volume."""
        sb, cfg = self.sb, self.sb.config
        role = f"turn-{n}"
        volume = sb.client.volumes.create(f"{sb.prefix}-{role}", labels=sb.labels("turn"), driver="local",
                                          driver_opts=tmpfs_volume_options(cfg.turn_volume_bytes, uid=0, gid=0))
        sb.volumes[role] = volume
        sb.containers[f"{role}-keeper"] = start_keeper(
            sb.client, sb.agent_image(), name=f"{sb.prefix}-t{n}-keeper", labels=sb.labels("helper"),
            volume=volume.name, target=cfg.container_paths.turn_dir, user=cfg.agent_user,
            init=sb.has_init, start=start_container)
        return volume

    def _turn_volume(self, n: int) -> Any:
        """Turn `n`'s volume, held mounted: the holder's, or the one made ahead with its keeper,
        or made now."""
        if n in self.sb.held_turns:
            self.sb.agent_namespace()  # the holder, once it runs with the volume mounted
            return self.sb.volumes[f"turn-{n}"]
        prepared = self._prepared.pop(n, None)
        if prepared is None:
            return self._make_turn_volume(n)
        prepared.wait()  # raises what making it raised
        return prepared.result

    def settle(self) -> list[str]:
        """Wait for every preparation and removal still running; the removals' problems (a
        preparation no turn used is the sandbox's to remove: only logged)."""
        for n, prepared in sorted(self._prepared.items()):
            if p := prepared.settle():
                log.warning("turn_prepare_unused_failed", turn=n, problem=p)
        self._prepared.clear()
        return [p for r in self.removals for p in ([r.settle()] + (r.result or [])) if p]

    def require_keepers(self, n: int, when: str) -> None:
        """Raise `KeeperLost` unless the agent side's holder (the workspace's and the declared
        turns' volumes, the network namespace) and turn `n`'s own keeper, if it has one, run.
        Checked before the turn starts and before its copy-out: without it, a holder that died
        would show as an empty workspace or a turn without output, and the agent would be
        blamed for it."""
        for role in ("netns", f"turn-{n}-keeper"):
            container = self.sb.containers.get(role)
            if container is None:
                continue
            try:
                container.reload()
                running = container.status == "running"
            except docker.errors.NotFound:
                running = False
            except docker.errors.DockerException as exc:
                raise engine_error(f"inspect the {role} container", Phase.TURN)(exc) from exc
            if not running:
                raise KeeperLost(f"the {role} container stopped {when} turn {n}: what it held is gone",
                                 phase=Phase.TURN, post_mortems=[post_mortem_of(container)])

    def run(self, turn: TurnLaunch) -> TurnRun:
        """`Sandbox.run_turn` on docker."""
        sb, cfg, cp = self.sb, self.sb.config, self.sb.config.container_paths
        uid, gid = uid_gid(cfg.agent_user)
        role = f"turn-{turn.n}"
        t0 = time.monotonic()
        netns = sb.agent_namespace()
        container = None
        try:
            volume = self._turn_volume(turn.n)
            self.require_keepers(turn.n, "before")
            binds: dict[str, dict[str, str]] = {
                sb.volumes["workspace"].name: {"bind": cp.workspace, "mode": "rw"},
                volume.name: {"bind": cp.turn_dir, "mode": "rw"},
            }
            for m in turn.mounts:
                binds[str(m.source)] = {"bind": m.target, "mode": "ro"}
            env = dict(turn.env)
            env.update({"HOME": cp.home, "WORKSPACE": cp.workspace, "TMPDIR": cp.tmp})
            container = sb.client.containers.create(
                turn.image or sb.agent_image(),
                entrypoint=TURN_ENTRYPOINT,
                command=["--turn-dir", cp.turn_dir],
                name=f"{sb.prefix}-t{turn.n}",
                labels=sb.labels("agent"),
                environment=env,
                working_dir=cp.workspace,
                volumes=binds,
                tmpfs={
                    cp.home: f"rw,nosuid,nodev,size={cfg.tmpfs_size},uid={uid},gid={gid},mode=0700",
                    cp.tmp: f"rw,nosuid,nodev,size={cfg.tmpfs_size},mode=1777",
                },
                network_mode=f"container:{netns.id}",
                **hardening(cfg.agent_limits, cfg.agent_user, init=sb.has_init),
            )
            sb.containers[role] = container
            files = [Entry(name, data, 0, 0, 0o644) for name, data in sorted(turn.files.items())]
            files.append(Entry("out", None, uid, gid, 0o755))
            container.put_archive(cp.turn_dir, build_tar(files))
            start_container(container)
        except docker.errors.DockerException as exc:
            pms = [post_mortem_of(container)] if container is not None else []
            raise ContainerStartError(f"agent container of turn {turn.n}: {exc}", phase=Phase.TURN, post_mortems=pms) from exc
        started = time.monotonic()
        if turn.next_n is not None:
            self.prepare(turn.next_n)  # beside this turn's run
        follower = LogFollower(container, turn.log_path)  # the turn's output reaches the host live
        follower.start()
        timed_out = False
        try:
            # A cancel (a campaign stopping) stops the turn at once instead of at its budget:
            # SIGTERM to docker-init, SIGKILL after a short grace; the wait then returns.
            with CancelWatch(turn.cancel, lambda: container.stop(timeout=CANCEL_GRACE_S)):
                timed_out = turn.wait_until_deadline(
                    lambda left: container.wait(timeout=left),
                    (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError), started, cfg.turn_hard_grace_s)
        except docker.errors.DockerException as exc:
            raise engine_error(f"wait for turn {turn.n}", Phase.TURN)(exc) from exc
        if timed_out:
            try:
                # SIGTERM to docker-init (forwarded to the turn), SIGKILL of everything after the grace.
                container.stop(timeout=max(1, int(cfg.kill_grace_s)))
            except docker.errors.DockerException as exc:
                raise engine_error(f"kill turn {turn.n}", Phase.TURN)(exc) from exc
        duration = time.monotonic() - started
        t_end = time.monotonic()
        pm = post_mortem_of(container, tail=200)
        follower.join(timeout=10)  # the log stream ends with the container
        self.require_keepers(turn.n, "during")
        try:
            stream, _ = container.get_archive(cp.turn_dir + "/.")
            skipped = safe_extract(stream_file(stream), turn.host_turn_dir, strip=0, max_bytes=512 * 2**20)
        except (docker.errors.DockerException, requests.exceptions.RequestException, ValueError) as exc:
            raise engine_error(f"copy out turn {turn.n}", Phase.TURN)(exc) from exc
        # The turn is over (its container exited, its folder is out): the removals run beside
        # what comes next; the sandbox's close waits for them.
        # A held turn volume stays until the holder is gone (the sandbox's close removes both).
        own_volume = turn.n not in sb.held_turns
        self.removals.append(InThread(f"{sb.prefix}-t{turn.n}-removal", lambda: [
            p for p in (sb.remove_container(role), sb.remove_container(f"{role}-keeper"),
                        sb.remove_volume(role) if own_volume else None) if p],
            Phase.TURN))
        return TurnRun(
            exit_code=pm.exit_code,
            timed_out=timed_out,
            duration_s=duration,
            oom_killed=bool(pm.oom_killed),
            start_overhead_s=started - t0,
            cleanup_s=time.monotonic() - t_end,
            detail={"container": container.name, "skipped": skipped} if skipped else {"container": container.name},
        )
