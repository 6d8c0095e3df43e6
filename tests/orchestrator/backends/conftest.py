"""Fixtures shared by the docker backend's network tests (firewall, host door, networks): one engine
client and the agent image per module, a fresh `DockerBackend` per test. A module that needs
another kind of backend defines its own fixture of the same name, which takes precedence."""
from __future__ import annotations

import pytest
from runtime_support import TEST_CAMPAIGN, docker_client, resolve_images


@pytest.fixture(scope="module")
def client():
    return docker_client()


@pytest.fixture(scope="module")
def agent_image(request, client):
    return resolve_images(request).agent.tag


@pytest.fixture()
def backend(client):
    from orchestrator.backends.docker.sandbox import DockerBackend
    from orchestrator.config import RuntimeConfig

    return DockerBackend(RuntimeConfig.from_env(campaign=TEST_CAMPAIGN), client=client)
