"""Remove engine objects whose owner process is gone (see `orchestrator.labels`).

Other orchestrators share the engine and tear their own attempts down while a reap runs, so
anything listed may be gone a moment later. The reap lists through the engine's list calls
only (the SDK's `containers.list` fetches each container again by id, and a container removed
in between raised `NotFound` out of `reap()`), and an object that has vanished by the time it
is removed counts as gone, never as a failure.

Host firewall rules of attempt bridges (orchestrator/backends/docker/firewall.py) carry no owner,
only their network's name: a rule is left over when its network is gone. The rules are listed
before the networks, so a rule seen belongs to a network created before the listing; if that
network is then missing, it was removed, and the rule guards nothing."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orchestrator import labels as L
from orchestrator.logs import get_logger

if TYPE_CHECKING:
    from orchestrator.backends.docker.firewall import TaggedRule

log = get_logger(__name__)


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


def _vanished(exc: BaseException) -> bool:
    """True when the engine says the object no longer exists or is already being removed
    (another orchestrator's teardown got there first)."""
    status = getattr(exc, "status_code", None)
    if status == 404:
        return True
    text = str(exc).lower()
    return status == 409 and ("already in progress" in text or "is being removed" in text)


def reap(client, *, all_dead: bool = False, campaign: str | None = None, dry_run: bool = False) -> ReapReport:
    """Remove containers, then volumes and networks, labelled `pb.managed=1` whose owner is dead;
    then the host firewall rules whose network is gone (of `campaign` only, when given).

    `all_dead` also removes objects whose owner cannot be checked from this host (created by
    another host sharing the engine, or without owner labels). Objects of a live owner are
    always kept. Containers go first: a network or volume in use cannot be removed.
    """
    report = ReapReport()
    rules = _firewall_rules(campaign)  # before the networks are listed (see the module's docstring)
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
            if _vanished(exc):
                report.removed.append(tag + " [already gone]")
            else:
                report.failed.append(f"{tag}: {exc}")

    api = client.api
    for c in api.containers(all=True, filters=filters):
        name = (c.get("Names") or [c["Id"][:12]])[0].lstrip("/")
        handle("container", name, c.get("Labels"), lambda cid=c["Id"]: api.remove_container(cid, force=True, v=False))
    for v in api.volumes(filters=filters).get("Volumes") or []:
        handle("volume", v["Name"], v.get("Labels"), lambda name=v["Name"]: api.remove_volume(name, force=True))
    for n in api.networks(filters=filters):
        handle("network", n["Name"], n.get("Labels"), lambda nid=n["Id"]: api.remove_network(nid))
    if rules:
        existing = {n["Name"] for n in api.networks()}
        for rule in rules:
            if rule.network in existing:
                continue
            tag = f"firewall rule {rule.command} {rule.network} (network gone)"
            if dry_run:
                report.removed.append(tag + " [dry run]")
                continue
            try:
                report.removed.append(tag if rule.delete() else tag + " [already gone]")
            except Exception as exc:  # noqa: BLE001 — a reap reports failures and goes on
                report.failed.append(f"{tag}: {exc}")
    for line in report.removed:
        log.info("reaped", what=line)
    return report


def _firewall_rules(campaign: str | None) -> list[TaggedRule]:
    """The host firewall rules of attempt bridges (of `campaign`), or none when the host's
    firewall cannot be read here (no iptables or no privilege: then none were installed by this
    user either)."""
    from orchestrator.backends.docker.firewall import FirewallError, campaign_key, list_tagged_rules

    try:
        rules = list_tagged_rules()
    except FirewallError as exc:
        log.debug("firewall_rules_not_listed", error=str(exc))
        return []
    return [r for r in rules if campaign is None or r.campaign_key == campaign_key(campaign)]
