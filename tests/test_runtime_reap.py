"""Labels and reap on the real engine: objects of a dead owner are removed, a live owner's kept."""
from __future__ import annotations

import subprocess
import sys
import uuid

import pytest
from runtime_support import TEST_CAMPAIGN, docker_client, resolve_images

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def client():
    return docker_client()


def _dead_owner():
    from orchestrator import labels as L

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    start = L.process_start_time(proc.pid) or "1"
    proc.wait()
    me = L.Owner.current()
    return L.Owner(proc.pid, start, me.boot, me.host)


def test_reap_removes_dead_owners_objects_only(client, request):
    from orchestrator import labels as L
    from orchestrator.reaper import reap

    image = resolve_images(request).agent.tag
    campaign = f"{TEST_CAMPAIGN}-reap-{uuid.uuid4().hex[:6]}"
    dead, live = _dead_owner(), L.Owner.current()
    made = []
    try:
        for who, owner in (("dead", dead), ("live", live)):
            labels = L.attempt_labels(campaign, f"reap-{who}", "helper", owner)
            made.append(client.networks.create(f"pb-reap-{who}-{uuid.uuid4().hex[:4]}", internal=True, labels=labels,
                                               ipam=None))
            made.append(client.volumes.create(f"pb-reap-{who}-{uuid.uuid4().hex[:4]}", labels=labels))
            made.append(client.containers.create(image, command=["true"], name=f"pb-reap-{who}-{uuid.uuid4().hex[:4]}",
                                                 labels=labels, network_mode="none"))
        foreign = L.attempt_labels(campaign, "reap-foreign", "helper", L.Owner(1, "1", dead.boot, "another-host"))
        made.append(client.volumes.create(f"pb-reap-foreign-{uuid.uuid4().hex[:4]}", labels=foreign))

        dry = reap(client, campaign=campaign, dry_run=True)
        assert len(dry.removed) == 3
        report = reap(client, campaign=campaign)
        assert len(report.removed) == 3 and not report.failed, report
        assert all("reap-dead" in r or "pb-reap-dead" in r for r in report.removed), report.removed
        left = {v.name for v in client.volumes.list(filters={"label": f"pb.campaign={campaign}"})}
        assert any("live" in n for n in left) and any("foreign" in n for n in left)
        assert [c.name for c in client.containers.list(all=True, filters={"label": f"pb.campaign={campaign}"})] == [
            m.name for m in made if hasattr(m, "start") and "live" in m.name
        ]
        # --all-dead: the foreign owner (cannot be checked) goes too; the live one stays.
        report = reap(client, campaign=campaign, all_dead=True)
        assert [r for r in report.removed if "foreign" in r] and not [r for r in report.removed if "live" in r]
    finally:
        for m in made:
            try:
                m.remove(force=True) if not hasattr(m, "connect") else m.remove()
            except Exception:  # noqa: BLE001
                pass
    assert not client.volumes.list(filters={"label": f"pb.campaign={campaign}"})
    assert not client.networks.list(filters={"label": f"pb.campaign={campaign}"})
    assert not client.containers.list(all=True, filters={"label": f"pb.campaign={campaign}"})


def test_reap_command_runs(client):
    out = subprocess.run([sys.executable, "-m", "orchestrator.cli", "reap", "--dry-run", "--campaign", "nothing-here"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "removed 0" in out.stdout
