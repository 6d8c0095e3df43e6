"""How a campaign reaches model providers: upstreams, where the real keys are, models, budgets.

Declared once per campaign (a YAML file, `--model-access FILE`, or the campaign file's
`model_access:` block), used for every attempt whose system declares that it calls a model:

    providers:
      anthropic:
        base_url: https://api.anthropic.com   # the only upstream the gateway forwards to
        key_env: ANTHROPIC_API_KEY            # the real key: a host environment variable ...
        # key_file: ~/.config/pb/anthropic.key  # ... or a file (one of the two)
        models: [claude-sonnet-4-5]           # the only models the agent may use
    model: claude-sonnet-4-5                  # optional: the model the systems run (default:
                                              # the system's own default if declared, else the
                                              # first declared model of its provider)
    budget: {max_tokens: 5000000, max_cost_usd: 20}   # per attempt
    prices: null                              # a price table file; default: the gateway's own
    provider_tools: []                        # provider-executed tools allowed on purpose, e.g.
                                              # [web_search] (model_gateway.policy.PROVIDER_TOOLS);
                                              # default none. Part of the cell's identity.
    limits:                                   # the provider account's limits, shared by every
      anthropic: {requests_per_minute: 50, tokens_per_minute: 400000, concurrent_streams: 8}
                                              # attempt of the campaign (model_gateway.limiter):
                                              # calls queue instead of being refused
    retry: {max_retries: 4, max_wait_s: 60, total_wait_s: 300}   # a 429/529/503 still answered
    campaign_max_cost_usd: 200                # the whole campaign: no attempt starts that could
                                              # take it past this (orchestrator.model_limits)

Limits, retry and the campaign budget are operational: they are not part of an attempt's
identity (the time a turn waited for the provider extends its budget, so a limit cannot change
what the agent may do; see orchestrator/model_limits.py).

A model the user serves on the orchestrator's own host (vLLM, llama.cpp, Ollama: an OpenAI- or
Anthropic-compatible API) is declared with a loopback `base_url`: `http://localhost:PORT`,
`http://127.0.0.1:PORT` (any 127.x.y.z) or `http://[::1]:PORT`, `http` only, a key optional (most
local servers take none). `localhost` is read as 127.0.0.1 and never resolved (no resolver can
point it elsewhere). In containers the gateway alone reaches exactly that address and port,
through a relay the orchestrator opens on the egress bridge for the attempt
(orchestrator/backends/docker/host_relay.py); the host's other ports and addresses stay closed.
Its models are usually not in the price table: `max_tokens` caps them, `max_cost_usd` only
with a `prices:` table that lists them.

Instead of `base_url` and a key, a provider may name `fake_script: FILE` (relative to the
declaring file): the project's fake provider then runs on the attempt's egress side playing that
scripted conversation (model_gateway.fake_script), and is the gateway's only upstream. This is
how the tests and a keyless demo run a real agent CLI end to end. Or `harness_oracle: true`: the
fake provider plays, per attempt, the harness-oracle conversation of the attempt's scenario (the
oracle's own requests sent through the harness's shell with `erp`: orchestrator/harness_oracle/),
which must pass every check; a keyless smoke run of any campaign of pilot tasks. A `fake_script`
provider may still name a key (`key_env`/`key_file`): the gateway then sends it upstream like a
real one, and a script with `require_key` answers 401 to anything else, which proves the key swap
with a stand-in key.

The real key is read on the host when an attempt starts and handed to the gateway container
alone (a private file of the service); it never enters the agent container, the attempt record
or a log. The agent gets a fresh random virtual key per attempt.
"""
from __future__ import annotations

import hashlib
import ipaddress
import os
import secrets
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from model_gateway.limits import ProviderLimits, RetryPolicy

ProviderName = Literal["anthropic", "openai"]


class ModelAccessError(ValueError):
    """A model-access declaration that cannot be used; the message names the field, never a key."""


class ProviderAccess(BaseModel):
    """One provider as the campaign reaches it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = None
    fake_script: Path | None = None
    harness_oracle: bool = False
    key_env: str | None = None
    key_file: Path | None = None
    models: tuple[str, ...] = Field(min_length=1)

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
            raise ValueError(f"base_url must be http(s)://host[:port] with no path, got {value!r}")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _host_model_over_http(self) -> ProviderAccess:
        if self.base_url is not None and self.on_host() is not None and urlsplit(self.base_url).scheme != "http":
            raise ValueError(f"a model on this host's loopback is reached over http, got {self.base_url!r}")
        return self

    @model_validator(mode="after")
    def _one_key_source(self) -> ProviderAccess:
        if self.key_env and self.key_file:
            raise ValueError("give key_env or key_file, not both")
        sources = [self.base_url is not None, self.fake_script is not None, self.harness_oracle]
        if sum(sources) != 1:
            raise ValueError("give base_url (a real provider), fake_script or harness_oracle: true (the fake "
                             "provider), exactly one")
        if self.harness_oracle and (self.key_env or self.key_file):
            raise ValueError("the harness-oracle fake provider takes no key")
        return self

    @property
    def is_fake(self) -> bool:
        """Whether the project's fake provider plays this provider (a script, or the harness oracle)."""
        return self.fake_script is not None or self.harness_oracle

    @property
    def host(self) -> str:
        """The upstream host (the egress allowlist of the attempt); empty for the fake provider."""
        return (urlsplit(self.base_url).hostname or "") if self.base_url else ""

    def on_host(self) -> tuple[str, int] | None:
        """(loopback address, port) when `base_url` names the orchestrator's own host: `localhost`
        (read as 127.0.0.1, never resolved), a 127.0.0.0/8 address or ::1. None otherwise."""
        if self.base_url is None:
            return None
        parts = urlsplit(self.base_url)
        host = (parts.hostname or "").lower()
        if host == "localhost":
            address = "127.0.0.1"
        else:
            try:
                ip = ipaddress.ip_address(host)
            except ValueError:
                return None
            if not ip.is_loopback:
                return None
            address = str(ip)
        return address, parts.port or (443 if parts.scheme == "https" else 80)

    def read_key(self, environ: dict[str, str] | None = None) -> str | None:
        """The real key, read now on the host; None when no source is declared (a keyless fake)."""
        env = os.environ if environ is None else environ
        if self.key_env:
            key = env.get(self.key_env, "").strip()
            if not key:
                raise ModelAccessError(f"providers: key_env {self.key_env} is not set on the host")
            return key
        if self.key_file:
            try:
                key = self.key_file.expanduser().read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ModelAccessError(f"providers: cannot read key_file {self.key_file}: {exc.strerror}") from None
            if not key:
                raise ModelAccessError(f"providers: key_file {self.key_file} is empty")
            return key
        return None


class Budget(BaseModel):
    """Per-attempt caps (see model_gateway.config.Budget)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tokens: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)


class ModelAccess(BaseModel):
    """The campaign's model access."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    providers: dict[ProviderName, ProviderAccess] = Field(min_length=1)
    model: str | None = None
    budget: Budget = Budget()
    prices: Path | None = None
    # The gateway refuses every provider-executed tool (model_gateway.policy) unless named here.
    provider_tools: tuple[str, ...] = ()
    limits: dict[ProviderName, ProviderLimits] = Field(default_factory=dict)
    retry: RetryPolicy | None = None  # default: RetryPolicy() where limits are declared, else none
    campaign_max_cost_usd: float | None = Field(default=None, ge=0)

    @field_validator("provider_tools")
    @classmethod
    def _provider_tools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from model_gateway.policy import allowed_families

        allowed_families(value)  # ValueError names the unknown ones
        return tuple(sorted(set(value)))

    def model_for(self, provider: str, system_default: str) -> str:
        """The model a system runs: the campaign's, else the system's default if declared, else
        the provider's first declared model."""
        access = self.providers.get(provider)  # type: ignore[call-overload]
        if access is None:
            raise ModelAccessError(f"providers: the system calls {provider!r}, which the campaign does not declare")
        if self.model is not None:
            if self.model not in access.models:
                raise ModelAccessError(f"model: {self.model!r} is not among providers.{provider}.models")
            return self.model
        return system_default if system_default in access.models else access.models[0]

    def retry_policy(self) -> RetryPolicy | None:
        """The gateway's retry policy: the declared one; the default one where limits are
        declared (a queued campaign must not hand the agent a 429); else none."""
        return self.retry if self.retry is not None else (RetryPolicy() if self.limits else None)

    def identity(self) -> dict[str, Any]:
        """What of it is part of an attempt's identity and record (no key, no key source path)."""
        def one(p: ProviderAccess) -> dict[str, Any]:
            out: dict[str, Any] = {"base_url": p.base_url, "models": list(p.models)}
            if p.fake_script is not None:
                out["fake_script_sha256"] = hashlib.sha256(p.fake_script.read_bytes()).hexdigest()
            if p.harness_oracle:  # only when declared, so every other identity is unchanged
                out["harness_oracle"] = True
            return out

        out: dict[str, Any] = {"providers": {name: one(p) for name, p in self.providers.items()},
                               "model": self.model, "budget": self.budget.model_dump(),
                               "prices": str(self.prices) if self.prices else None}
        if self.provider_tools:  # only when declared, so every identity without them is unchanged
            out["provider_tools"] = list(self.provider_tools)
        return out


def parse_model_access(doc: Any, where: str) -> ModelAccess:
    """Validate a model-access document; the error names the field."""
    try:
        return ModelAccess.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise ModelAccessError(f"{where}: {field}: {first['msg'].removeprefix('Value error, ')}") from None


def load_model_access(path: Path) -> ModelAccess:
    """Read a model-access YAML file."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelAccessError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ModelAccessError(f"{path}: not valid YAML: {exc}") from None
    if isinstance(doc, dict) and isinstance(doc.get("providers"), dict):
        for raw in doc["providers"].values():  # paths relative to the declaring file
            for key in ("fake_script", "key_file"):
                if isinstance(raw, dict) and isinstance(raw.get(key), str):
                    ref = Path(raw[key]).expanduser()
                    raw[key] = str(ref if ref.is_absolute() else (path.parent / ref).resolve())
    access = parse_model_access(doc, str(path))
    for name, p in access.providers.items():
        if p.fake_script is not None and not p.fake_script.is_file():
            raise ModelAccessError(f"{path}: providers.{name}.fake_script: {p.fake_script} is not a file")
    check_cost_cap(access, str(path))
    return access


def check_cost_cap(access: ModelAccess, where: str) -> None:
    """A cost cap must be able to bind: every declared model needs a price (an open-weight model
    served on the host usually has none). Raises ModelAccessError naming the unpriced models."""
    if access.budget.max_cost_usd is None:
        return
    from model_gateway.prices import load_prices

    try:
        table = load_prices(access.prices)
    except (OSError, ValueError) as exc:
        raise ModelAccessError(f"{where}: prices: {exc}") from None
    unpriced = sorted({m for p in access.providers.values() for m in p.models if table.price(m) is None})
    if unpriced:
        raise ModelAccessError(f"{where}: budget.max_cost_usd cannot cap {', '.join(unpriced)}: not in the price "
                               f"table {table.version!r}; list them in a `prices:` table or cap with max_tokens")


def new_virtual_key() -> str:
    """A fresh random per-attempt key for the agent (worthless outside its attempt's gateway)."""
    return "pbv-" + secrets.token_urlsafe(32)
