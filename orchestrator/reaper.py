"""Remove engine objects whose owner process is gone (see `orchestrator.labels`)."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from orchestrator import labels as L

log = logging.getLogger(__name__)


@dataclass
class ReapReport:
    """What a reap found and did."""

    removed: list[str] = field(default_factory=list)  # "container pb-...", ...
    kept: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return f"removed {len(self.removed)}, kept {len(self.kept)} (owner alive or unknown), failed {len(self.failed)}"


def _should_remove(state: L.OwnerState, all_dead: bool) -> bool:
    return state is L.OwnerState.DEAD or (all_dead and state is L.OwnerState.UNKNOWN)


def reap(client, *, all_dead: bool = False, campaign: str | None = None, dry_run: bool = False) -> ReapReport:
    """Remove containers, then volumes and networks, labelled `pb.managed=1` whose owner is dead.

    `all_dead` also removes objects whose owner cannot be checked from this host (created by
    another host sharing the engine, or without owner labels). Objects of a live owner are
    always kept. Containers go first: a network or volume in use cannot be removed.
    """
    report = ReapReport()
    filters = {"label": [f"{L.MANAGED}=1"] + ([f"{L.CAMPAIGN}={campaign}"] if campaign else [])}

    def handle(kind: str, name: str, labels: dict | None, remove) -> None:
        state = L.owner_state(labels)
        tag = f"{kind} {name} ({state.value})"
        if not _should_remove(state, all_dead):
            report.kept.append(tag)
            return
        if dry_run:
            report.removed.append(tag + " [dry run]")
            return
        try:
            remove()
            report.removed.append(tag)
        except Exception as exc:  # noqa: BLE001 — a reap reports failures and goes on
            if getattr(exc, "status_code", None) == 404:
                report.removed.append(tag + " [already gone]")
            else:
                report.failed.append(f"{tag}: {exc}")

    for c in client.containers.list(all=True, filters=filters):
        handle("container", c.name, c.labels, lambda c=c: c.remove(force=True, v=False))
    for v in client.volumes.list(filters=filters):
        handle("volume", v.name, v.attrs.get("Labels"), lambda v=v: v.remove(force=True))
    for n in client.networks.list(filters=filters):
        handle("network", n.name, n.attrs.get("Labels"), lambda n=n: n.remove())
    for line in report.removed:
        log.info("reaped %s", line)
    return report
