"""The ERP image on its own (one container through testcontainers, tests/support/containers.py):
it serves a real scenario snapshot, becomes ready by its control health check, answers the
agent API with the agent's token, and keeps the two listeners' tokens apart."""
from __future__ import annotations

import secrets

import httpx
import pytest
from containers import NetworkHttpWait, address_on, labelled_network
from testcontainers.core.container import DockerContainer

from orchestrator.images import config
from orchestrator.scenarios.cache import ensure_scenario

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

AGENT_PORT, CONTROL_PORT = 8080, 8081


def test_erp_image_serves_a_scenario_and_keeps_tokens_apart(images):
    scenario = ensure_scenario("payment-run", 0)
    control_token = secrets.token_hex(32)
    agent_token = str(scenario.meta["agent_token"])
    labels = config.helper_labels("test-erp-image")
    with labelled_network(labels) as network:
        health = NetworkHttpWait(network, CONTROL_PORT, "/control/health",
                                 headers={"Authorization": f"Bearer {control_token}"}).with_startup_timeout(300)
        erp = (DockerContainer(images.erp.tag)
               .with_network(network)
               .with_kwargs(labels=labels)
               .with_copy_into_container(scenario.db.read_bytes(), "/data/company.db", 0o666)
               .with_copy_into_container(scenario.world.read_bytes(), "/data/world.json", 0o444)
               .with_copy_into_container(control_token.encode(),
                                         "/data/control.token", 0o444)
               .with_command(["serve", "--db", "/data/company.db", "--world", "/data/world.json",
                              "--agent-bind", f"0.0.0.0:{AGENT_PORT}", "--control-bind", f"0.0.0.0:{CONTROL_PORT}",
                              "--control-token-file", "/data/control.token"])
               .waiting_for(health))
        with erp:
            host = address_on(erp, network)
            agent = {"Authorization": f"Bearer {agent_token}"}
            who = httpx.get(f"http://{host}:{AGENT_PORT}/whoami", headers=agent, timeout=10, trust_env=False)
            assert who.status_code == 200, who.text
            # the agent's token opens nothing on the control listener, the control token nothing on the agent's
            assert httpx.get(f"http://{host}:{CONTROL_PORT}/control/health", headers=agent, timeout=10,
                             trust_env=False).status_code == 401
            assert httpx.get(f"http://{host}:{AGENT_PORT}/whoami", headers={"Authorization": f"Bearer {control_token}"},
                             timeout=10, trust_env=False).status_code == 401
