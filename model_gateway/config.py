"""The gateway's configuration: what it forwards, to whom, for whom, and within which budget.

Two files, both written by the orchestrator and given to the gateway container alone:

- the *config* (`GatewayConfig`, JSON): providers with their upstream base URL and declared
  models, the Host names the gateway answers to, the client networks it accepts, the budget,
  the price table. Holds no secret; the orchestrator may keep a copy in the attempt record.
- the *secrets* (`GatewaySecrets`, JSON): the real upstream key per provider and the attempt's
  virtual key(s). Never written to the attempt record or any log.
"""
from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .limits import ProviderLimits, RetryPolicy
from .policy import allowed_families

ProviderName = Literal["anthropic", "openai"]

# Which provider API each path belongs to. Nothing else is forwarded.
ROUTES: dict[str, tuple[ProviderName, str]] = {
    "/v1/messages": ("anthropic", "messages"),
    "/v1/messages/count_tokens": ("anthropic", "count_tokens"),
    "/v1/responses": ("openai", "responses"),
    "/v1/chat/completions": ("openai", "chat"),
}


class ConfigError(ValueError):
    """A gateway config or secrets file that cannot be used; the message names the field."""


class ProviderConfig(BaseModel):
    """One upstream provider: where it is and which models the attempt may use there."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = Field(description="scheme://host[:port], the provider's API root (no path)")
    models: tuple[str, ...] = Field(min_length=1, description="the only model names forwarded")

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port], got {value!r}")
        if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
            raise ValueError(f"base_url must have no path, query or credentials, got {value!r}")
        return value.rstrip("/")

    @property
    def host(self) -> str:
        """The upstream host name (what the egress allowlist must hold)."""
        return urlsplit(self.base_url).hostname or ""


class Budget(BaseModel):
    """Per-attempt caps. Tokens are all prompt tokens (cache reads and writes included) plus
    output tokens; cost is from the price table. A cap of None is no cap."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tokens: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)


class GatewayConfig(BaseModel):
    """Everything the gateway needs except the keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attempt_id: str = Field(min_length=1)
    providers: dict[ProviderName, ProviderConfig] = Field(min_length=1)
    hosts: tuple[str, ...] = Field(min_length=1, description="Host header values answered (name or name:port)")
    clients: tuple[str, ...] = Field(default=(), description="client networks accepted (CIDR); empty: any")
    budget: Budget = Budget()
    prices: str | None = Field(default=None, description="price table file; default: the packaged one")
    upstream_timeout_s: float = Field(default=600.0, gt=0)
    connect_timeout_s: float = Field(default=10.0, gt=0)
    provider_tools: tuple[str, ...] = Field(default=(), description="provider-executed tool families allowed on "
                                            "purpose (model_gateway.policy.PROVIDER_TOOLS); default: none")
    limits: dict[ProviderName, ProviderLimits] = Field(default_factory=dict, description="the provider account's "
                                                       "limits; calls are queued within them (model_gateway.limiter)")
    retry: RetryPolicy | None = Field(default=None, description="retry 429/529/503 answers; none: pass them on")
    limiter_url: str | None = Field(default=None, description="the campaign's limiter service (its token is a "
                                    "secret); none: the limits are kept in this gateway's own process")

    @field_validator("provider_tools")
    @classmethod
    def _provider_tools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        allowed_families(value)  # ValueError names the unknown ones
        return tuple(sorted(set(value)))

    @field_validator("clients")
    @classmethod
    def _clients(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for cidr in value:
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError:
                raise ValueError(f"client network {cidr!r} is not a CIDR") from None
        return value

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(h.lower() for h in value)

    def client_networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        """The accepted client networks, parsed."""
        return [ipaddress.ip_network(c, strict=False) for c in self.clients]


class GatewaySecrets(BaseModel):
    """The keys: never logged, never in an attempt record."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    upstream_keys: dict[ProviderName, str] = Field(default_factory=dict)
    virtual_keys: tuple[str, ...] = Field(min_length=1)
    limiter_token: str | None = None

    @field_validator("virtual_keys")
    @classmethod
    def _long_enough(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for key in value:
            if len(key) < 24:
                raise ValueError("a virtual key must have at least 24 characters")
        return value

    def __repr__(self) -> str:  # keep keys out of tracebacks and logs
        return f"GatewaySecrets(providers={sorted(self.upstream_keys)}, virtual_keys={len(self.virtual_keys)})"

    __str__ = __repr__


def _load(path: Path, model: type[BaseModel], what: str) -> BaseModel:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: the {what} is not valid JSON: {exc}") from None
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(top)"
        # Never echo the input: it may be a key.
        raise ConfigError(f"{path}: {what} field {field}: {first['msg'].removeprefix('Value error, ')}") from None


def load_config(path: Path) -> GatewayConfig:
    """Parse and validate the gateway config; ConfigError names the file and the field."""
    cfg = _load(path, GatewayConfig, "gateway config")
    assert isinstance(cfg, GatewayConfig)
    return cfg


def load_secrets(path: Path) -> GatewaySecrets:
    """Parse and validate the secrets file; its values never appear in an error."""
    sec = _load(path, GatewaySecrets, "gateway secrets")
    assert isinstance(sec, GatewaySecrets)
    return sec
