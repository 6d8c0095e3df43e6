"""The host side of the gateway: model-access declarations, the usage-log stream from a real
gateway process, usage per turn and attempt, and what counts as a provider outage."""
from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from repo_paths import REPO_ROOT

from model_gateway.local import start_fake_provider, start_gateway
from orchestrator.attempt.model_usage import GatewayControl, GatewayUnavailable, UsageLogStreamer, attempt_usage, is_outage, turn_usage
from orchestrator.model_access import ModelAccessError, load_model_access, new_virtual_key, parse_model_access


def test_model_access_file_and_key_sources(tmp_path: Path) -> None:
    key_file = tmp_path / "anthropic.key"
    key_file.write_text("sk-from-file\n")
    path = tmp_path / "access.yaml"
    path.write_text(f"""
providers:
  anthropic: {{base_url: "https://api.anthropic.com/", key_file: {key_file}, models: [claude-sonnet-4-5, claude-haiku-4-5]}}
  openai: {{base_url: "https://api.openai.com", key_env: PB_TEST_OPENAI_KEY, models: [gpt-5]}}
budget: {{max_tokens: 1000, max_cost_usd: 2.5}}
""")
    access = load_model_access(path)
    assert access.providers["anthropic"].base_url == "https://api.anthropic.com"
    assert access.providers["anthropic"].host == "api.anthropic.com"
    assert access.providers["anthropic"].read_key() == "sk-from-file"
    assert access.providers["openai"].read_key({"PB_TEST_OPENAI_KEY": "sk-env"}) == "sk-env"
    with pytest.raises(ModelAccessError, match="PB_TEST_OPENAI_KEY is not set"):
        access.providers["openai"].read_key({})
    assert access.model_for("anthropic", "claude-haiku-4-5") == "claude-haiku-4-5"
    assert access.model_for("anthropic", "claude-opus-4-1") == "claude-sonnet-4-5"
    with pytest.raises(ModelAccessError, match="does not declare"):
        parse_model_access({"providers": {"openai": {"base_url": "http://x", "models": ["m"]}}}, "x").model_for("anthropic", "m")
    identity = json.dumps(access.identity())
    assert "sk-" not in identity and str(key_file) not in identity and "max_cost_usd" in identity
    with pytest.raises(ModelAccessError, match=r"providers.anthropic.base_url"):
        parse_model_access({"providers": {"anthropic": {"base_url": "https://x/v1", "models": ["m"]}}}, "f")
    with pytest.raises(ModelAccessError, match="not both"):
        parse_model_access({"providers": {"anthropic": {"base_url": "https://x", "key_env": "A", "key_file": "/k",
                                                        "models": ["m"]}}}, "f")
    assert new_virtual_key() != new_virtual_key() and len(new_virtual_key()) > 40


def row(turn: int, status: str, http_status: int = 200, **tokens: int) -> dict:
    return {"turn": turn, "status": status, "http_status": http_status, "reported": bool(tokens), "cost_usd": None, **tokens}


def test_turn_usage_budget_and_outage() -> None:
    rows = [row(1, "ok", input_tokens=10, output_tokens=2, prompt_tokens=15) | {"cost_usd": 0.5},
            row(1, "refused", 421),
            row(2, "ok", input_tokens=1, output_tokens=1, prompt_tokens=1) | {"cost_usd": 0.25},
            row(2, "budget_exhausted", 400),
            row(3, "upstream_error", 502), row(3, "upstream_status", 529),
            row(4, "upstream_status", 529), row(4, "ok", input_tokens=3, output_tokens=3, prompt_tokens=3)]
    one = turn_usage(rows, 1)
    assert (one["requests"], one["prompt_tokens"], one["output_tokens"], one["cost_usd"], one["refused"]) == (1, 15, 2, 0.5, 1)
    assert not one["budget_exhausted"] and not one["provider_outage"]
    assert turn_usage(rows, 2)["budget_exhausted"] is True
    three = turn_usage(rows, 3)
    assert three["provider_outage"] is True and three["upstream_errors"] == 2
    assert turn_usage(rows, 4)["provider_outage"] is False  # one call got through: not an outage
    assert is_outage([row(5, "upstream_status", 400)]) is False  # a 4xx is the request's fault, not an outage
    assert is_outage([]) is False
    total = attempt_usage(rows)
    assert total["requests"] == 6 and total["cost_usd"] == 0.75 and total["budget_exhausted"] is True
    assert total["unpriced_requests"] == 1


def test_usage_log_streams_from_a_real_gateway(tmp_path: Path) -> None:
    (tmp_path / "f").mkdir()
    (tmp_path / "g").mkdir()
    fake = start_fake_provider({"match": "any", "steps": [], "otherwise": {"content": [{"type": "text", "text": "x"}],
                                                                           "usage": {"input_tokens": 5, "output_tokens": 1}}},
                               workdir=tmp_path / "f")
    gw = start_gateway({"attempt_id": "a", "hosts": ["model-gateway:8080"],
                        "providers": {"anthropic": {"base_url": fake.ready["url"], "models": ["fake-claude"]}}},
                       {"virtual_keys": ["pbv-" + "k" * 30]}, workdir=tmp_path / "g")
    try:
        control = GatewayControl(gw.ready["control"], gw.control_token or "")
        streamer = UsageLogStreamer(control, tmp_path / "gateway.jsonl", interval_s=0.05)
        streamer.start()
        with httpx.Client(trust_env=False) as http:
            for turn in (1, 2):
                control.mark_turn(turn)
                for _ in range(turn):
                    r = http.post(gw.ready["proxy"] + "/v1/messages", headers={"host": "model-gateway:8080",
                                                                             "x-api-key": "pbv-" + "k" * 30},
                                  json={"model": "fake-claude", "messages": []})
                    assert r.status_code == 200
        rows = streamer.drain()
        assert [r["turn"] for r in rows] == [1, 2, 2]
        assert [json.loads(x)["seq"] for x in (tmp_path / "gateway.jsonl").read_text().splitlines()] == [1, 2, 3]
        assert turn_usage(rows, 2)["prompt_tokens"] == 10
        control.revoke()
        assert control.health()["revoked"] is True
        bad = GatewayControl(gw.ready["control"], "wrong-token-wrong-token")
        with pytest.raises(GatewayUnavailable, match="401"):
            bad.mark_turn(1)
    finally:
        gw.stop()
        fake.stop()


def test_fake_provider_access_from_the_example_file() -> None:
    example = REPO_ROOT / "agent_sandbox" / "examples"
    access = load_model_access(example / "model-access-fake.yaml")
    fake = access.providers["anthropic"]
    assert fake.fake_script == (example / "fake-claude-payment-run.yaml").resolve() and fake.host == ""
    assert fake.read_key() is None and access.model_for("anthropic", "claude-sonnet-4-5") == "fake-claude"
    assert "fake_script_sha256" in access.identity()["providers"]["anthropic"]
    real = load_model_access(example / "model-access.yaml")
    assert real.providers["anthropic"].key_env == "ANTHROPIC_API_KEY" and real.budget.max_cost_usd == 10
    with pytest.raises(ModelAccessError, match="exactly one"):
        parse_model_access({"providers": {"anthropic": {"models": ["m"]}}}, "f")


def test_gateway_cost_reaches_the_summary_and_the_report() -> None:
    """The §8 metric: model cost per accepted attempt, from the gateway's figures of each attempt."""
    from orchestrator.campaign.summary import compute_summary
    from orchestrator.report.label_page import render_report

    def line(rep: int, passed: bool, cost: float) -> dict:
        rows = [row(1, "ok", input_tokens=100, output_tokens=10, prompt_tokens=100) | {"cost_usd": cost,
                                                                                     "price_version": "2026-12-01"}]
        return {"identity": {"cell": "claude-code:payment-run", "system": "claude-code", "task": "payment-run",
                             "seed": 0, "rep": rep, "condition": "clean"},
                "outcome": "graded", "passed": passed, "checks": [], "turns": [], "writes": {"total": 0, "self_reversed": 0},
                "usage": attempt_usage(rows)}

    lines = [line(1, True, 0.25), line(2, False, 0.5), line(3, True, 0.75)]
    declaration = {"reps": 3, "seeds": [0], "cells": [{"cell": "claude-code:payment-run", "system": "claude-code",
                                                       "task": "payment-run", "condition": "clean"}]}
    summary = compute_summary(lines, declaration)
    cost = summary["cells"]["claude-code:payment-run"]["cost"]
    assert cost["cost_usd_total"] == 1.5 and cost["accepted"] == 2 and cost["cost_per_accepted_usd"] == 0.75
    html = render_report("gw", summary, lines, None)
    assert "$0.7500" in html


def test_campaign_refuses_a_key_source_that_gives_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.attempt.inputs import systems_identity
    from orchestrator.cells import parse_cell
    from orchestrator.errors import ConfigError

    example = REPO_ROOT / "agent_sandbox" / "examples" / "model-access.yaml"
    cells = [parse_cell("claude-code:payment-run")]
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        systems_identity(cells, None, str(example))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-" + "x" * 20)
    ident = systems_identity(cells, None, str(example))
    assert "sk-test" not in json.dumps(ident)
