"""Which declared upstreams are a model served on the orchestrator's own host
(`ProviderAccess.on_host`, orchestrator/model_access.py), both ways: the loopback forms a user
writes for vLLM, llama.cpp or Ollama, and the names and addresses that only look local."""
from __future__ import annotations

import pytest

from orchestrator.model_access import ModelAccessError, parse_model_access


def provider(base_url: str, **extra: object):
    access = parse_model_access({"providers": {"openai": {"base_url": base_url, "models": ["m"], **extra}}}, "t")
    return access.providers["openai"]


@pytest.mark.parametrize(("base_url", "target"), [
    ("http://localhost:8000", ("127.0.0.1", 8000)),       # vLLM's default
    ("http://LOCALHOST:11434/", ("127.0.0.1", 11434)),    # Ollama's, written loudly with a slash
    ("http://127.0.0.1:8080", ("127.0.0.1", 8080)),       # llama.cpp's server
    ("http://127.1.2.3:9000", ("127.1.2.3", 9000)),       # all of 127/8 is loopback
    ("http://[::1]:8000", ("::1", 8000)),
    ("http://localhost", ("127.0.0.1", 80)),
])
def test_loopback_upstreams_are_on_the_host(base_url: str, target: tuple[str, int]) -> None:
    assert provider(base_url).on_host() == target


@pytest.mark.parametrize("base_url", [
    "https://api.openai.com",
    "http://localhost.example.com:8000",   # a name that merely starts like it: resolved like any other
    "http://mylocalhost:8000",
    "http://0.0.0.0:8000",                 # not loopback: "every address", never a target
    "http://10.0.0.5:8000",                # the host's LAN address stays closed to the gateway
    "http://[::ffff:7f00:1]:8000",         # IPv4-mapped: not read as loopback
    "http://192.168.1.10:11434",
])
def test_other_upstreams_are_not(base_url: str) -> None:
    assert provider(base_url).on_host() is None


def test_a_host_model_is_reached_over_http_only() -> None:
    with pytest.raises(ModelAccessError, match="over http"):
        provider("https://localhost:8443")
    with pytest.raises(ModelAccessError, match="over http"):
        provider("https://127.0.0.1:8443")


def test_fake_providers_are_not_on_the_host(tmp_path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("steps: []\n")
    access = parse_model_access({"providers": {"openai": {"fake_script": str(script), "models": ["m"]}}}, "t")
    assert access.providers["openai"].on_host() is None


def test_the_identity_keeps_the_declared_url_and_no_key(monkeypatch) -> None:
    monkeypatch.setenv("LOCAL_KEY", "sk-local-secret")
    access = parse_model_access({"providers": {"openai": {"base_url": "http://localhost:8000", "key_env": "LOCAL_KEY",
                                                          "models": ["qwen2.5-coder-7b"]}}}, "t")
    ident = access.identity()
    assert ident["providers"]["openai"] == {"base_url": "http://localhost:8000", "models": ["qwen2.5-coder-7b"]}
    assert "sk-local-secret" not in repr(ident)
    # Keyless is the common case for a local server: no key source, no key.
    assert provider("http://localhost:8000").read_key({}) is None


def test_a_cost_cap_must_be_able_to_bind(tmp_path) -> None:
    """An open-weight model has no price: a cost cap on it would never bind, so it is refused;
    with a price table that lists it, or with a token cap, it is accepted."""
    from orchestrator.model_access import load_model_access

    def write(budget: str, prices: str = "") -> object:
        path = tmp_path / "access.yaml"
        path.write_text(f"providers:\n  openai: {{base_url: 'http://localhost:8000', models: [qwen-7b]}}\n"
                        f"budget: {budget}\n{prices}")
        return path

    with pytest.raises(ModelAccessError, match=r"max_cost_usd cannot cap qwen-7b"):
        load_model_access(write("{max_cost_usd: 5}"))
    assert load_model_access(write("{max_tokens: 100000}")).budget.max_tokens == 100000
    table = tmp_path / "prices.yaml"
    table.write_text("version: local-1\nmodels:\n  qwen-7b: {input: 0.0, output: 0.0}\n")
    assert load_model_access(write("{max_cost_usd: 5}", f"prices: {table}\n")).budget.max_cost_usd == 5
    # Hosted models of the packaged table keep their cost cap.
    path = tmp_path / "hosted.yaml"
    path.write_text("providers:\n  openai: {base_url: 'https://api.openai.com', models: [gpt-5]}\n"
                    "budget: {max_cost_usd: 5}\n")
    assert load_model_access(path).budget.max_cost_usd == 5


def test_the_example_declares_a_host_model() -> None:
    from repo_paths import REPO_ROOT

    from orchestrator.model_access import load_model_access

    access = load_model_access(REPO_ROOT / "agent_sandbox" / "examples" / "model-access-host.yaml")
    assert access.providers["openai"].on_host() == ("127.0.0.1", 8000)
    assert access.providers["openai"].read_key({}) is None and access.budget.max_tokens
