"""Where attempts run: `docker/` (isolated, the official mode) and `local` (host processes).

`base` is the one interface (`Backend`, `Sandbox`) both implement; `services` the named services
a sandbox runs, as declarations. May import: the orchestrator's root modules, `images` and `networks`;
never `attempt`, `campaign` or the commands.
"""
from __future__ import annotations

from orchestrator.backends.base import Backend, Sandbox


def make_backend(name: str, config=None) -> Backend:
    """Build the backend called `name` ("docker" or "local")."""
    from orchestrator.config import RuntimeConfig

    config = config or RuntimeConfig.from_env()
    if name == "docker":
        from orchestrator.backends.docker.sandbox import DockerBackend

        return DockerBackend(config)
    if name == "local":
        from orchestrator.backends.local import LocalBackend

        return LocalBackend(config)
    raise ValueError(f"unknown backend {name!r}; choose docker or local")


__all__ = ["Backend", "Sandbox", "make_backend"]
