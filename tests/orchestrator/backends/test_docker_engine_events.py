"""A container's engine events are recorded from its start (`backends/docker/containers.EventRecorder`):
the engine keeps only its last 256 events, so on a busy engine a query made after a container
died can find none of its events — and an ERP killed through the engine read as the agent's
doing (seen in a clean-clone CI run beside two validations)."""
from __future__ import annotations

import time
import uuid

import docker.errors
import pytest

from orchestrator import labels as L
from orchestrator.backends.docker.containers import EventRecorder, merge_events

pytestmark = pytest.mark.docker

ENGINE_EVENT_BUFFER = 256  # dockerd's in-memory event log (daemon/events)


def test_the_recorder_keeps_a_kill_the_engine_has_forgotten(docker_client, images):
    labels = L.attempt_labels("tests", "engine-events", "helper")
    c = docker_client.containers.create(images.agent.tag, entrypoint=["sleep"], command=["60"], network_mode="none",
                                        name=f"pb-test-events-{uuid.uuid4().hex[:8]}", labels=labels)
    rec = EventRecorder(docker_client, c.id, c.name)
    rec.start()
    try:
        t0 = time.time()
        c.start()
        c.kill()
        # Enough other engine events to push the kill out of the engine's own log.
        for _ in range(ENGINE_EVENT_BUFFER // 2 + 20):
            docker_client.volumes.create(f"pb-test-events-{uuid.uuid4().hex[:8]}", labels=labels).remove()
        history = list(docker_client.events(since=int(t0) - 1, until=int(time.time()) + 1,
                                            filters={"container": c.id}, decode=True))
        recorded = rec.seen(until_action="die", timeout_s=10)
        actions = [e.get("Action") for e in recorded]
        assert "kill" in actions and "die" in actions, actions
        assert not any(e.get("Action") == "kill" for e in history), "the engine still held the kill: no overflow shown"
        merged = merge_events(recorded, history, recorded)
        assert len(merged) == len({(e.get("timeNano"), e.get("Action")) for e in merged})  # each event once
    finally:
        rec.close()
        rec.join(timeout=5)
        try:
            c.remove(force=True)
        except docker.errors.NotFound:
            pass
    assert not rec.is_alive()
