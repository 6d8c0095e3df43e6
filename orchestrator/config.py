"""Typed settings of the attempt runtime, defined in one place.

Every path, port, address range, limit and timeout the runtime uses comes from `RuntimeConfig`.
The defaults are the official settings; `RuntimeConfig.from_env()` lets a developer override a
few of them with `PB_*` environment variables (documented on each field) without editing code.
The model is frozen: an attempt records the config it ran with in `attempt.json`.
"""
from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

REPO_ROOT = Path(__file__).resolve().parents[1]


class Limits(BaseModel):
    """Resource limits of one container (memory in bytes, CPUs as a fraction, pids as a count)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_bytes: int = Field(gt=16 * 2**20)
    cpus: float = Field(gt=0, le=64)
    pids: int = Field(gt=8)


class ContainerPaths(BaseModel):
    """Paths inside the containers (the in-container half of contracts §8)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Service containers: a per-attempt volume per service, mounted only into that service;
    # its files live in `<service_data_mount>/<service name>` (the volume root belongs to root).
    service_data_mount: str = "/data"
    # Agent container.
    workspace: str = "/workspace"
    home: str = "/home/agent"
    turn_dir: str = "/turn"
    tmp: str = "/tmp"
    policy_dir: str = "/opt/policy"


class Images(BaseModel):
    """Image references. None (the default) = ask the image builder, `orchestrator.images.ensure_images()`,
    which builds what is missing and returns content-hash tags; a tag given here is used as is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    erp: str | None = None
    agent: str | None = None


class RuntimeConfig(BaseModel):
    """Settings of the attempt runtime (docker and local backends)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Host paths.
    repo_root: Path = REPO_ROOT
    runs_root: Path = REPO_ROOT / "runs"  # PB_RUNS_ROOT
    scratch_root: Path = REPO_ROOT / ".cache" / "attempts"  # PB_SCRATCH_ROOT (local backend)
    campaign: str = "adhoc"  # label written on every engine object (pb.campaign)

    # Addresses: each attempt takes two subnets of `subnet_prefix` out of `subnet_range`.
    subnet_range: str = "10.231.0.0/16"  # PB_SUBNET_RANGE
    subnet_prefix: int = Field(default=28, ge=16, le=29)

    # Ports inside the ERP container (each bound to one network's address only).
    erp_agent_port: int = 8080
    erp_control_port: int = 8081
    # The host loopback port the web UI of a human attempt is published on (0: an ephemeral one).
    web_port: int = Field(default=0, ge=0, le=65535)

    # Users inside the containers.
    agent_user: str = "1000:1000"
    erp_user: str = "1001:1001"

    images: Images = Images()
    container_paths: ContainerPaths = ContainerPaths()

    agent_limits: Limits = Limits(memory_bytes=2 * 2**30, cpus=1.0, pids=256)
    erp_limits: Limits = Limits(memory_bytes=1 * 2**30, cpus=1.0, pids=128)
    tmpfs_size: str = "256m"
    # The cgroup parent of the docker backend's service containers (the ERP, gateway, MCP; never
    # the agent's). "auto": "/" on an engine with cgroup v1 and the cgroupfs driver, else the
    # engine's default. Under /docker every container together weighs as much as one host
    # process, so on a busy host a service's CPU-bound start took 2-4x its time as a local
    # process; at the root each service weighs one process (its own limits unchanged), like the
    # local backend's. None: the engine's default; any other value is passed to the engine.
    service_cgroup_parent: str | None = "auto"
    # Size quotas of what the agent writes (docker backend: tmpfs volumes, see volume_quota.py):
    # the workspace across all turns, and each turn's folder (out/). The agent meets ENOSPC at
    # the quota; both stay below the copy-out limits, so a copy-out never has to cut.
    workspace_volume_bytes: int = Field(default=1 * 2**30, ge=16 * 2**20)
    turn_volume_bytes: int = Field(default=256 * 2**20, ge=4 * 2**20, le=512 * 2**20)

    # Concurrent Docker Engine API requests from this process (orchestrator/backends/docker/limits.py):
    # general requests share `docker_api_slots` (PB_DOCKER_API_SLOTS); removals and stops have
    # their own `docker_api_teardown_slots`, so teardown never waits behind setups. Long-poll
    # calls (wait, attach, followed logs, events) hold no slot.
    docker_api_slots: int = Field(default=8, ge=1)
    docker_api_teardown_slots: int = Field(default=4, ge=1)
    # Admission of the expensive starts (orchestrator/admission.py): at most `start_slots` service
    # starts (create → healthy) run at once on the host, across every orchestrator sharing
    # `admission_root` (PB_START_SLOTS, PB_ADMISSION_ROOT); the rest queue, outside any deadline.
    start_slots: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1), ge=1)
    admission_root: Path = REPO_ROOT / ".cache" / "admission"
    # ERP slots the docker backend makes ahead (orchestrator/backends/docker/warm_pool.py: an
    # attempt's networks and its ERP started in standby, each taken by one attempt; PB_WARM_ERP_SLOTS).
    # 0: none (every attempt makes its own). Each slot waiting costs a standby ERP's memory.
    warm_erp_slots: int = Field(default=0, ge=0, le=16)

    # Timeouts (seconds).
    docker_api_timeout_s: float = 120.0
    erp_ready_timeout_s: float = 60.0  # a service's health wait without progress (see HealthCheck)
    control_timeout_s: float = 30.0
    advance_timeout_s: float = 300.0
    snapshot_timeout_s: float = 120.0
    default_turn_budget_s: float = 1200.0  # a turn without budget_s
    # The turn entrypoint enforces the budget itself (SIGTERM to the harness at the budget,
    # SIGKILL 10 s later, exit 124). The orchestrator's hard deadline comes after that, so a
    # well-behaved turn still writes out/; a turn past budget + hard grace is killed outright.
    turn_hard_grace_s: float = 15.0
    kill_grace_s: float = 2.0  # at the hard deadline: SIGTERM, then SIGKILL after this
    stop_timeout_s: float = 10.0  # ERP shutdown before kill
    stream_interval_s: float = 0.5  # audit/faults polling period while items arrive
    stream_idle_max_s: float = 5.0  # ... backing off to this while a poll finds nothing
    did_not_start_s: float = 5.0  # exit 126/127 this early: the harness never started

    @field_validator("subnet_range")
    @classmethod
    def _valid_range(cls, value: str) -> str:
        net = ipaddress.ip_network(value, strict=True)
        if net.version != 4:
            raise ValueError("subnet_range must be an IPv4 network")
        return value

    @model_validator(mode="after")
    def _range_holds_subnets(self) -> RuntimeConfig:
        if ipaddress.ip_network(self.subnet_range).prefixlen > self.subnet_prefix:
            raise ValueError(f"subnet_prefix /{self.subnet_prefix} is larger than subnet_range {self.subnet_range}")
        return self

    @classmethod
    def from_env(cls, **overrides: object) -> RuntimeConfig:
        """Defaults, then `PB_*` environment overrides, then explicit keyword overrides."""
        env: dict[str, object] = {}
        if v := os.environ.get("PB_RUNS_ROOT"):
            env["runs_root"] = Path(v)
        if v := os.environ.get("PB_SCRATCH_ROOT"):
            env["scratch_root"] = Path(v)
        if v := os.environ.get("PB_SUBNET_RANGE"):
            env["subnet_range"] = v
        if v := os.environ.get("PB_CAMPAIGN"):
            env["campaign"] = v
        if v := os.environ.get("PB_DOCKER_API_SLOTS"):
            env["docker_api_slots"] = v  # validated (and converted) by the model
        if v := os.environ.get("PB_START_SLOTS"):
            env["start_slots"] = v
        if v := os.environ.get("PB_ADMISSION_ROOT"):
            env["admission_root"] = Path(v)
        if v := os.environ.get("PB_WARM_ERP_SLOTS"):
            env["warm_erp_slots"] = v
        env.update(overrides)
        return cls.model_validate(env)

    def with_changes(self, **changes: object) -> RuntimeConfig:
        """A copy with some fields changed (validated again)."""
        data = self.model_dump()
        data.update(changes)
        return RuntimeConfig(**data)
