"""`orchestrate images prune`: remove the project's images that the current sources no longer
produce. Every source edit makes a new tag, so a developer's engine collects old ones."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import docker
import docker.errors

from . import config
from .ensure import build_lock, docker_client
from .tags import planned_tags

Report = Callable[[str], None]


@dataclass
class PruneReport:
    """Tags removed, and tags kept with the reason."""

    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def prune_images(client: docker.DockerClient | None = None, *, dry_run: bool = False,
                 report: Report = lambda _msg: None) -> PruneReport:
    """Untag (and so delete) every pb-base/pb-erp/pb-agent/pb-gateway/pb-agent-claude tag other than the current sources'
    tags. An image some container still uses (running or not) is kept; the engine also refuses
    to delete it. Do not run it while attempts of older sources are still being started."""
    client = client or docker_client()
    repositories = ({config.BASE_REPOSITORY} | {s.repository for s in config.APP_IMAGES}
                    | {s.repository for s in config.VARIANT_IMAGES.values()})
    result = PruneReport()
    with build_lock():
        current = set(planned_tags().values())
        in_use = {c.attrs.get("Image") for c in client.containers.list(all=True)}
        for image in client.images.list():
            for tag in image.tags:
                if tag.rsplit(":", 1)[0] not in repositories:
                    continue
                if tag in current:
                    result.kept.append(f"{tag} (current)")
                elif image.id in in_use:
                    result.kept.append(f"{tag} (used by a container)")
                elif dry_run:
                    result.removed.append(f"{tag} (dry run: not removed)")
                else:
                    try:
                        client.images.remove(tag, noprune=False)
                        result.removed.append(tag)
                    except docker.errors.APIError as exc:
                        result.kept.append(f"{tag} ({exc.explanation or exc})")
    for line in result.removed:
        report(f"removed {line}")
    return result
