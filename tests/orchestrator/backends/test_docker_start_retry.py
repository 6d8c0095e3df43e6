"""A container start the engine refuses before the container's process ran is tried again
(`backends/docker/containers.start_container`): under load the engine sometimes answers "cannot start a
stopped process" for an agent container whose code never ran, and that was an infra_error.

Real engine refusals stand in for that rare one: joining the namespace of a container that is
not running is refused the same way, before any process of the container starts."""
from __future__ import annotations

import uuid

import docker.errors
import pytest

from orchestrator import labels as L
from orchestrator.backends.docker.containers import START_TRIES, has_run, start_container

pytestmark = pytest.mark.docker


@pytest.fixture()
def made(docker_client):
    """Create containers of the agent image (never started); all removed at the end."""
    created = []

    def make(argv: list[str], **kwargs):
        c = docker_client.containers.create(
            kwargs.pop("image"), entrypoint=argv[:1], command=argv[1:], name=f"pb-test-start-{uuid.uuid4().hex[:8]}",
            labels=L.attempt_labels("tests", "start-retry", "helper"), **kwargs)
        created.append(c)
        return c

    yield make
    for c in created:
        try:
            c.remove(force=True)
        except docker.errors.NotFound:
            pass


def test_engine_state_tells_whether_the_process_ran(made, images):
    never = made(["true"], image=images.agent.tag, network_mode="none")
    never.reload()
    assert not has_run(never.attrs["State"])
    ran = made(["true"], image=images.agent.tag, network_mode="none")
    ran.start()
    assert ran.wait(timeout=60)["StatusCode"] == 0
    ran.reload()
    assert has_run(ran.attrs["State"]) and not ran.attrs["State"]["Running"]


def test_a_refused_start_is_tried_again_and_then_runs(made, images):
    holder = made(["sleep", "60"], image=images.agent.tag, network_mode="none")
    turn = made(["true"], image=images.agent.tag, network_mode=f"container:{holder.id}")
    pauses: list[float] = []

    def pause(seconds: float) -> None:  # the engine's reason for refusing goes away meanwhile
        pauses.append(seconds)
        holder.start()

    assert start_container(turn, pause=pause) == 1
    assert len(pauses) == 1
    assert turn.wait(timeout=60)["StatusCode"] == 0


def test_a_start_refused_every_time_raises_after_the_last_try(made, images):
    holder = made(["sleep", "60"], image=images.agent.tag, network_mode="none")  # never started
    turn = made(["true"], image=images.agent.tag, network_mode=f"container:{holder.id}")
    pauses: list[float] = []
    with pytest.raises(docker.errors.APIError):
        start_container(turn, pause=pauses.append)
    assert len(pauses) == START_TRIES - 1
    turn.reload()
    assert not has_run(turn.attrs["State"])  # what a refused start leaves: nothing of it ran
