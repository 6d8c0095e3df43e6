"""Provider limits, the retry policy and the campaign cost budget as the model access declares
them, and what of them reaches the gateway (orchestrator/services/gateway.py): only what is
declared, so every existing gateway config is unchanged; the limiter token only in the secrets."""
from __future__ import annotations

import json
from typing import Any

import pytest

from model_gateway.config import GatewayConfig, GatewaySecrets
from orchestrator.model_access import ModelAccessError, parse_model_access
from orchestrator.services.gateway import GatewayLaunch

PROVIDERS = {"anthropic": {"base_url": "https://api.anthropic.com", "models": ["claude-sonnet-4-5"]}}


def launch(access: dict[str, Any], **extra: Any) -> GatewayLaunch:
    return GatewayLaunch(attempt_id="a1", access=parse_model_access({"providers": PROVIDERS, **access}, "test"),
                         virtual_key="pbv-" + "v" * 40, control_token="c" * 32, **extra)


def test_nothing_declared_leaves_the_gateway_config_as_it_was() -> None:
    plain = launch({})
    assert set(plain.config_doc()) == {"attempt_id", "providers", "hosts", "clients", "budget"}
    assert "limiter_token" not in plain.secrets_doc()
    assert plain.access.retry_policy() is None
    assert "limits" not in plain.access.identity() and "campaign_max_cost_usd" not in plain.access.identity()


def test_declared_limits_reach_the_gateway_with_the_default_retry_policy() -> None:
    got = launch({"limits": {"anthropic": {"requests_per_minute": 60, "concurrent_streams": 4}}},
                 limiter_url="http://10.0.0.1:7000", limiter_token="t" * 32)
    doc, keys = got.config_doc(), got.secrets_doc()
    assert doc["limits"] == {"anthropic": {"requests_per_minute": 60, "tokens_per_minute": None,
                                           "concurrent_streams": 4}}
    assert doc["retry"]["max_retries"] == 4 and doc["limiter_url"] == "http://10.0.0.1:7000"
    assert keys["limiter_token"] == "t" * 32 and "t" * 32 not in json.dumps(doc)  # the token is a secret
    assert "t" * 32 not in repr(got)
    cfg = GatewayConfig.model_validate(doc)  # the gateway accepts what the orchestrator writes
    assert cfg.limits["anthropic"].requests_per_minute == 60
    assert GatewaySecrets.model_validate(keys).limiter_token == "t" * 32


def test_a_declared_retry_policy_alone_reaches_the_gateway() -> None:
    doc = launch({"retry": {"max_retries": 1, "max_wait_s": 5}}).config_doc()
    assert "limits" not in doc and doc["retry"]["max_retries"] == 1 and doc["retry"]["max_wait_s"] == 5


@pytest.mark.parametrize(("access", "field"), [
    ({"limits": {"anthropic": {"requests_per_minute": 0}}}, "limits.anthropic.requests_per_minute"),
    ({"limits": {"anthropic": {"tokens_per_min": 5}}}, "limits.anthropic.tokens_per_min"),
    ({"limits": {"mistral": {"requests_per_minute": 5}}}, "limits.mistral"),
    ({"retry": {"max_wait_s": 0}}, "retry.max_wait_s"),
    ({"campaign_max_cost_usd": -1}, "campaign_max_cost_usd"),
])
def test_bad_declarations_are_refused_naming_the_field(access: dict[str, Any], field: str) -> None:
    with pytest.raises(ModelAccessError, match=field.replace(".", r"\.")):
        parse_model_access({"providers": PROVIDERS, **access}, "test")
