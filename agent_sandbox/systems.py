"""The harness contract: which systems can take a turn, declared as data.

Two kinds of system take turns:

- a *command system*: any agent CLI, declared in a YAML systems file (name, argv template,
  environment passthrough, extra read-only mounts, optional image, optional usage extractor);
- a *scripted policy*: `oracle`, `null` or `neg:<name>`, Python code from the task pack run
  through `agent_sandbox.client` with the agent's token. These names are built in and cannot
  be declared in a systems file.

A systems file looks like this (see `examples/systems.yaml`):

    systems:
      shell-echo:
        argv: ["my-agent", "--prompt-file", "{prompt_file}", "--out", "{out_dir}"]
        env: [MODEL_GATEWAY_URL]          # host variables passed through by name
        set_env: {NO_COLOR: "1"}          # fixed values
        mounts: ["./bin:/opt/agent-bin"]  # host (relative to this file) : container, read-only
        image: null                       # default: the agent image; a tag, or a project
                                          # image role such as `agent-claude`
        usage: codex-jsonl                # an extractor of agent_sandbox.usage
        limits: {reasoning_effort: high}  # what the harness adapter applies (adapter_limits.py;
                                          # only with a built-in harness that applies them)
        model:                            # the system calls a model: the attempt gets a gateway
          provider: anthropic             # anthropic | openai (which provider API it speaks)
          model: claude-sonnet-4-5        # the default model (a campaign may name another)
          base_url_env: ANTHROPIC_BASE_URL  # set to the gateway's URL (+ base_path) each turn
          key_env: ANTHROPIC_API_KEY      # set to the attempt's virtual key each turn
          base_path: ""                   # e.g. "/v1" for clients that want the API root

Built-in command systems (`BUILTIN_SYSTEMS`, no systems file needed): `claude-code` (Claude
Code's CLI in the `agent-claude` image) and `codex` (the Codex CLI in the `agent-codex` image,
both taken out of pinned PyPI wheels; a systems file entry that `extends` one may give another
`image` or `mounts`).

This module is used on the host (it needs pydantic); the sandbox side reads the rendered
`system.json` (contracts §8) without it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agent_sandbox.adapter_limits import LIMITS_ENV, SUPPORTED, harness_module
from agent_sandbox.argv_template import check_template
from agent_sandbox.usage import EXTRACTORS

POLICY_NAMES = ("oracle", "alt", "null")
NEG_PREFIX = "neg:"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Set by the harness itself for every turn; a system must not override them.
RESERVED_ENV = frozenset({"ERP_URL", "ERP_TOKEN", "HOME", "WORKSPACE", "TURN_BUDGET_S", "PATH", LIMITS_ENV})
EFFORT_RE = re.compile(r"^[a-z]{3,16}$")
TOOL_RE = re.compile(r"^[A-Za-z0-9_.:*()/ -]{1,128}$")


class SystemsFileError(ValueError):
    exit_class = "bad_input"  # the orchestrator's exit class (orchestrator.exit_codes.Failure)
    """A systems file that cannot be used; the message names the file and the field."""


def is_policy_name(name: str) -> bool:
    """True for the built-in scripted policy names: `oracle`, `alt`, `null`, `neg:<name>`."""
    return name in POLICY_NAMES or (name.startswith(NEG_PREFIX) and len(name) > len(NEG_PREFIX))


class Mount(BaseModel):
    """An extra read-only bind mount into the agent container."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str = Field(description="host path (absolute after loading)")
    target: str = Field(description="absolute path inside the container")

    @field_validator("target")
    @classmethod
    def _absolute_target(cls, value: str) -> str:
        if not PurePosixPath(value).is_absolute():
            raise ValueError(f"mount target must be an absolute container path, got {value!r}")
        if value.rstrip("/") in ("", "/turn", "/workspace", "/home"):
            raise ValueError(f"mount target {value!r} would hide a folder the harness needs")
        return value


class ModelUse(BaseModel):
    """How a command system calls its model provider (through the attempt's model gateway)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: Literal["anthropic", "openai"]
    model: str = Field(min_length=1, description="the default model name")
    base_url_env: str = Field(description="environment variable the CLI reads the API base URL from")
    key_env: str = Field(description="environment variable the CLI reads its API key from")
    base_path: str = Field(default="", description="appended to the gateway URL, e.g. /v1")
    model_env: str = Field(default="PB_MODEL", description="environment variable holding the model name")

    @field_validator("base_url_env", "key_env", "model_env")
    @classmethod
    def _env_names(cls, value: str) -> str:
        _check_env_name(value)
        return value

    @field_validator("base_path")
    @classmethod
    def _base_path(cls, value: str) -> str:
        if value and (not value.startswith("/") or value.endswith("/") or "?" in value):
            raise ValueError(f"base_path must be empty or like /v1, got {value!r}")
        return value

    def turn_env(self, gateway_url: str, virtual_key: str, model: str | None = None) -> dict[str, str]:
        """The variables a turn gets: the gateway's URL, the virtual key, the model name."""
        return {self.base_url_env: gateway_url.rstrip("/") + self.base_path, self.key_env: virtual_key,
                self.model_env: model or self.model}


class AdapterLimits(BaseModel):
    """Limits the harness adapter applies to its CLI (agent_sandbox/adapter_limits.py); unset
    ones keep the CLI's own default. Part of the system's definition, so of the cell's identity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reasoning_effort: str | None = Field(default=None, description="e.g. low, medium, high, xhigh")
    max_turns: int | None = Field(default=None, ge=1, le=10_000)
    max_output_tokens: int | None = Field(default=None, ge=1, le=10_000_000)
    tools_allowed: tuple[str, ...] | None = None
    tools_denied: tuple[str, ...] = ()

    @field_validator("reasoning_effort")
    @classmethod
    def _effort(cls, value: str | None) -> str | None:
        if value is not None and not EFFORT_RE.match(value):
            raise ValueError(f"reasoning_effort {value!r}: a lower-case word such as low, medium, high")
        return value

    @field_validator("tools_allowed", "tools_denied")
    @classmethod
    def _tools(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for name in value or ():
            if not TOOL_RE.match(name):
                raise ValueError(f"tool {name!r}: letters, digits and _ . : * ( ) / - or space only")
        return value

    def declared(self) -> dict[str, Any]:
        """The limits set, by name (what the turn gets in PB_ADAPTER_LIMITS)."""
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=True)


class SystemSpec(BaseModel):
    """A command system: how to start one agent session for one turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Literal["command"] = "command"
    argv: tuple[str, ...] = Field(min_length=1, description="may use {prompt_file} {workspace} {out_dir} {budget_s}")
    env: tuple[str, ...] = Field(default=(), description="host environment variables passed through by name")
    set_env: dict[str, str] = Field(default_factory=dict, description="environment variables with fixed values")
    mounts: tuple[Mount, ...] = ()
    image: str | None = None
    usage: str | None = Field(default=None, description="usage extractor name (agent_sandbox.usage.EXTRACTORS)")
    model: ModelUse | None = Field(default=None, description="set when the system calls a model provider")
    limits: AdapterLimits = Field(default_factory=AdapterLimits, description="applied by the harness adapter")
    description: str | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if is_policy_name(value):
            raise ValueError(f"{value!r} is a built-in scripted policy name (oracle, null, neg:<name>)")
        if not NAME_RE.match(value):
            raise ValueError(f"system name {value!r} must be lower-case letters, digits, '.', '_' or '-'")
        return value

    @field_validator("argv")
    @classmethod
    def _argv(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for word in value:
            check_template(word)
        if not value[0].strip():
            raise ValueError("argv[0] (the program) is empty")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            _check_env_name(name)
        return value

    @field_validator("set_env")
    @classmethod
    def _set_env(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            _check_env_name(name)
        return value

    @field_validator("usage")
    @classmethod
    def _usage(cls, value: str | None) -> str | None:
        if value is not None and value not in EXTRACTORS:
            raise ValueError(f"unknown usage extractor {value!r}; known: {', '.join(sorted(EXTRACTORS))}")
        return value

    @model_validator(mode="after")
    def _no_overlap(self) -> SystemSpec:
        both = set(self.env) & set(self.set_env)
        if both:
            raise ValueError(f"{', '.join(sorted(both))} both passed through (env) and set (set_env)")
        if self.model is not None:
            injected = {self.model.base_url_env, self.model.key_env, self.model.model_env}
            clash = injected & (set(self.env) | set(self.set_env))
            if clash:
                raise ValueError(f"{', '.join(sorted(clash))} set by the model gateway for every turn; "
                                 "remove it from env/set_env")
        declared = set(self.limits.declared())
        if declared:  # only a limit the harness applies may be declared, so a recorded one was applied
            module = harness_module(self.argv)
            unapplied = sorted(declared - SUPPORTED.get(module or "", frozenset()))
            if unapplied:
                runs = f"its harness {module}" if module else "a command that is not a harness adapter"
                raise ValueError(f"limits: {', '.join(unapplied)} cannot be applied by {runs}")
        return self

    @property
    def calls_model(self) -> bool:
        """Whether the attempt needs a model gateway for this system."""
        return self.model is not None

    def system_json(self, host_env: Mapping[str, str]) -> dict[str, Any]:
        """The turn's `system.json` (contracts §8): argv still templated, env resolved.

        Passthrough variables absent from `host_env` are left out (the system sees them unset).
        """
        env = {name: host_env[name] for name in self.env if name in host_env}
        env.update(self.set_env)
        if self.limits.declared():
            env[LIMITS_ENV] = json.dumps(self.limits.declared(), sort_keys=True)
        out: dict[str, Any] = {"kind": "command", "name": self.name, "argv": list(self.argv), "env": env}
        if self.usage:
            out["usage"] = self.usage
        return out


def _check_env_name(name: str) -> None:
    if not ENV_NAME_RE.match(name):
        raise ValueError(f"{name!r} is not an environment variable name")
    if name in RESERVED_ENV:
        raise ValueError(f"{name} is set by the harness for every turn and cannot be passed or set")


def policy_system_json(name: str, module: str | Path | None) -> dict[str, Any]:
    """The turn's `system.json` for a scripted policy (`module` may be None only for `null`)."""
    if not is_policy_name(name):
        raise ValueError(f"{name!r} is not a scripted policy name (oracle, alt, null, neg:<name>)")
    if module is None and name != "null":
        raise ValueError(f"policy {name!r} needs the task's policies module")
    out: dict[str, Any] = {"kind": "policy", "name": name}
    if module is not None:
        out["module"] = str(module)
    return out


def _parse_mount(raw: Any, base: Path) -> Any:
    """`"SRC:TARGET"` or `{source, target}`; a relative source is relative to the systems file."""
    if isinstance(raw, str):
        source, sep, target = raw.rpartition(":")
        if not sep or not source:
            raise ValueError(f"mount {raw!r} must be SOURCE:TARGET")
        raw = {"source": source, "target": target}
    if isinstance(raw, dict) and isinstance(raw.get("source"), str):
        src = Path(raw["source"]).expanduser()
        raw = {**raw, "source": str(src if src.is_absolute() else (base / src).resolve())}
    return raw


def _loc(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc)


def load_systems(path: str | Path) -> dict[str, SystemSpec]:
    """Parse and validate a systems file; `SystemsFileError` names the file and the field at fault."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SystemsFileError(f"{path}: cannot read the systems file: {exc.strerror or exc}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SystemsFileError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("systems"), dict):
        raise SystemsFileError(f"{path}: expected a mapping with a 'systems:' mapping of name -> system")
    extra = sorted(set(doc) - {"systems", "version"})
    if extra:
        raise SystemsFileError(f"{path}: unknown top-level key(s): {', '.join(extra)}")
    out: dict[str, SystemSpec] = {}
    for key, raw in doc["systems"].items():
        where = f"{path}: systems.{key}"
        if not isinstance(raw, dict):
            raise SystemsFileError(f"{where}: expected a mapping of fields, got {type(raw).__name__}")
        data = dict(raw)
        base_name = data.pop("extends", None)
        if base_name is not None:
            base = BUILTIN_SYSTEMS.get(str(base_name))
            if base is None:
                raise SystemsFileError(f"{where}.extends: {base_name!r} is not a built-in system "
                                       f"(built in: {', '.join(sorted(BUILTIN_SYSTEMS))})")
            inherited = base.model_dump(exclude={"name"}, exclude_none=True)
            data = {**inherited, **data}
        elif str(key) in BUILTIN_SYSTEMS:
            raise SystemsFileError(f"{where}: {key!r} is a built-in system; give another name with "
                                   f"`extends: {key}` to change it")
        if "name" in data and data["name"] != key:
            raise SystemsFileError(f"{where}.name: {data['name']!r} differs from the key {key!r}")
        data["name"] = str(key)
        if isinstance(data.get("argv"), str):
            raise SystemsFileError(f"{where}.argv: give a list of words, not one string")
        mounts = data.get("mounts")
        if mounts is not None:
            if not isinstance(mounts, (list, tuple)):  # a tuple: inherited through `extends`
                raise SystemsFileError(f"{where}.mounts: expected a list")
            try:
                data["mounts"] = [_parse_mount(m, path.parent) for m in mounts]
            except ValueError as exc:
                raise SystemsFileError(f"{where}.mounts: {exc}") from None
        try:
            out[str(key)] = SystemSpec.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = _loc(first["loc"])
            msg = first["msg"].removeprefix("Value error, ")
            more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
            raise SystemsFileError(f"{where}.{field}: {msg}{more}") from None
    return out


_HARNESS = ("python", "-m")
BUILTIN_SYSTEMS: dict[str, SystemSpec] = {
    "claude-code": SystemSpec(
        name="claude-code",
        description="Claude Code's CLI (claude -p, JSON output) through the attempt's model gateway",
        argv=(*_HARNESS, "agent_sandbox.harness_claude", "--prompt-file", "{prompt_file}", "--out-dir", "{out_dir}"),
        image="agent-claude",
        usage="claude-json",
        model=ModelUse(provider="anthropic", model="claude-sonnet-4-5", base_url_env="ANTHROPIC_BASE_URL",
                       key_env="ANTHROPIC_API_KEY"),
    ),
    "codex": SystemSpec(
        name="codex",
        description="Codex CLI (codex exec --json) through the attempt's model gateway (Responses API)",
        argv=(*_HARNESS, "agent_sandbox.harness_codex", "--prompt-file", "{prompt_file}", "--out-dir", "{out_dir}"),
        image="agent-codex",
        usage="codex-jsonl",
        model=ModelUse(provider="openai", model="gpt-5-codex", base_url_env="OPENAI_BASE_URL",
                       key_env="OPENAI_API_KEY", base_path="/v1"),
    ),
}


def builtin_system(name: str) -> SystemSpec | None:
    """A built-in command system by name, or None."""
    return BUILTIN_SYSTEMS.get(name)
