"""The host side of a systems file's extra mounts: which host paths may be shown to an agent.

`agent_sandbox.systems` checks where a mount lands inside the container. This module checks
what it shows from the host, so a systems file cannot open the host to the agent: it refuses

- `/` itself, and the broad folders that hold everything else (`/home`, `/var`, `/tmp`, ...);
- system folders and anything inside them (`/etc`, `/proc`, `/sys`, `/dev`, `/run`, `/boot`,
  the engine's data root, which holds every attempt's volumes and so the ERP's control token);
- any socket (the Docker socket, and every other host service a socket would reach);
- anything that contains or lies inside a protected place: the scenario cache (truth.json,
  the reference), the runs folder (every attempt's record), the scratch folder (the local
  backend's service files, the control token among them).

Paths are compared after resolving symlinks, so a link to a protected place is refused like
the place itself. Every refusal is a `ConfigError` naming the system, the mount and the reason.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from orchestrator.errors import ConfigError
from orchestrator.scenarios.folder import cache_root_default

#: Folders that may not be mounted, nor anything inside them.
SYSTEM_TREES = ("/etc", "/proc", "/sys", "/dev", "/run", "/var/run", "/boot", "/var/lib/docker",
                "/var/lib/containerd", "/root/.docker")
#: Folders that may not be mounted whole (a tool installed below them may be).
BROAD_FOLDERS = ("/", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/usr", "/usr/local", "/usr/lib",
                 "/var", "/var/lib", "/home", "/root", "/opt", "/srv", "/mnt", "/media", "/tmp", "/var/tmp")
#: Where the Docker socket is found when DOCKER_HOST does not say.
DOCKER_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock")


class HostMount(Protocol):
    """Anything with a host `source` and a container `target` (backends.base.Mount)."""

    @property
    def source(self) -> Path: ...

    @property
    def target(self) -> str: ...


@dataclass(frozen=True)
class ProtectedPlace:
    """A host folder no mount may contain or lie inside, and what it holds."""

    path: Path
    what: str


def protected_places(*, scenario_cache: Path, runs_root: Path, scratch_root: Path,
                     engine_root: Path | None = None) -> tuple[ProtectedPlace, ...]:
    """The places of one runtime: the scenario cache, the runs folder, the scratch folder (the
    local backend keeps each attempt's control token there) and the engine's data root (the
    docker backend's volumes, the ERP's control token among them)."""
    places = [ProtectedPlace(scenario_cache, "the scenario cache"),
              ProtectedPlace(runs_root, "the runs folder"),
              ProtectedPlace(scratch_root, "the attempts' scratch folder (control tokens)")]
    if engine_root is not None:
        places.append(ProtectedPlace(engine_root, "the engine's data root (volumes, control tokens)"))
    return tuple(places)


def runtime_places(config: object | None = None, scenario_dir: Path | None = None) -> tuple[ProtectedPlace, ...]:
    """`protected_places` of a `RuntimeConfig` (default: `RuntimeConfig.from_env()`), the scenario
    cache attempts use by default and, when given, the attempt's own scenario folder (it may
    live in another cache)."""
    from orchestrator.config import RuntimeConfig

    cfg = config if isinstance(config, RuntimeConfig) else RuntimeConfig.from_env()
    places = protected_places(scenario_cache=cache_root_default(), runs_root=cfg.runs_root,
                              scratch_root=cfg.scratch_root)
    if scenario_dir is not None:
        places += (ProtectedPlace(Path(scenario_dir), "the attempt's scenario (truth, reference)"),)
    return places


def _resolved(path: Path | str) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _docker_sockets() -> list[Path]:
    found = [Path(p) for p in DOCKER_SOCKETS]
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://"):
        found.append(Path(host[len("unix://"):]))
    return [_resolved(p) for p in found]


def mount_problem(source: Path | str, places: Iterable[ProtectedPlace]) -> str | None:
    """Why the host path `source` may not be mounted into an agent container, or None."""
    path = _resolved(source)
    for broad in BROAD_FOLDERS:
        if path == _resolved(broad):
            return f"it is the host folder {broad} (everything below it would be visible)"
    for sock in _docker_sockets():
        if path == sock or _inside(sock, path):
            return f"it is or contains the Docker socket ({sock})"
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = 0
    if stat.S_ISSOCK(mode):
        return "it is a socket (a channel to a host service)"
    for tree in SYSTEM_TREES:
        resolved_tree = _resolved(tree)
        if _inside(path, resolved_tree):
            return f"it is inside the system folder {tree}"
    for place in places:
        where = _resolved(place.path)
        if _inside(path, where):
            return f"it lies inside {place.what} ({where})"
        if _inside(where, path):
            return f"it contains {place.what} ({where})"
    return None


def check_system_mounts(system: str, mounts: Iterable[HostMount], places: Iterable[ProtectedPlace]) -> None:
    """Refuse (`ConfigError`) the first mount of `system` whose host side may not be shown to
    an agent, naming the mount and why."""
    places = tuple(places)
    for m in mounts:
        problem = mount_problem(m.source, places)
        if problem is not None:
            raise ConfigError(f"system {system!r}: mount {m.source}:{m.target} is refused: {problem}")
