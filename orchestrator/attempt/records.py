"""The typed records of one attempt (contracts §9): what it runs, each turn, and its result.

`AttemptSpec` is the input (contracts §10); `AttemptRecord` is attempt.json (identity, written
once the inputs are resolved), `TurnRecord` one line of turns.jsonl and one entry of the result's
`turns`, `ResultRecord` is result.json (written last). The records serialise with `to_json()`,
which leaves out the optional keys that are unset, as the contract's `key?` says.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.cells import Cell
from orchestrator.errors import AttemptOutcome, TurnFacts
from orchestrator.trajectory.mismatch import TranscriptMismatch


@dataclass(frozen=True)
class AttemptSpec:
    """What to run (contracts §10)."""

    cell: Cell
    seed: int
    rep: int = 1
    label: str = "adhoc"
    timeout_override_s: float | None = None
    systems_file: Path | None = None
    model_access: Path | None = None  # orchestrator/model_access.py; needed by systems that call a model


def new_attempt_id(spec: AttemptSpec) -> str:
    """Unique per run of (cell, seed, rep): engine object names and labels use it."""
    return f"{spec.cell.slug[:40]}-s{spec.seed}-r{spec.rep}-{uuid.uuid4().hex[:8]}".replace("_", "-")


class ScenarioInput(Protocol):
    """What the attempt reads of a scenario (orchestrator.scenarios.folder.Scenario, contracts §7)."""

    @property
    def db(self) -> Path: ...
    @property
    def world(self) -> Path: ...
    @property
    def handbook_dir(self) -> Path: ...
    @property
    def meta(self) -> dict[str, Any]: ...
    @property
    def turns(self) -> list[Any]: ...


class TaskInput(Protocol):
    """What the attempt reads of a task pack (tasks.packs.TaskPack, contracts §10)."""

    @property
    def version(self) -> Any: ...
    @property
    def fault_profiles(self) -> dict[str, Any]: ...
    @property
    def policies_module(self) -> Path: ...
    @property
    def alt_module(self) -> Path: ...


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # Keys the contract marks optional (`key?`): left out of the JSON when unset.
    _optional: ClassVar[frozenset[str]] = frozenset()

    def to_json(self) -> dict[str, Any]:
        """The record as JSON data, optional keys left out when None/empty."""
        data = self.model_dump(mode="json")
        for key in self._optional:
            if data.get(key) in (None, [], {}):
                data.pop(key, None)
        return data

    def dumps(self, *, indent: int | None = None) -> str:
        return json.dumps(self.to_json(), indent=indent, sort_keys=True)


class TurnRecord(_Record):
    """What the runtime observed about one agent turn."""

    n: int
    date: str
    budget_s: float
    exit_code: int | None
    timed_out: bool  # the entrypoint stopped the harness at the budget, or the runtime killed it
    killed_by_runtime: bool  # the turn outlived budget + hard grace and was killed from outside
    duration_s: float
    oom_killed: bool = False
    did_not_start: bool = False
    # Exit 125 with out/traceback.txt: the entrypoint *says* it could not set the turn up. Written
    # inside the agent's container, so recorded as a claim only: the turn is the agent's.
    setup_failed: bool = False
    notes: list[str] = Field(default_factory=list)  # what happened that is no failure (memory kill, copy-out cut)
    advance_s: float = 0.0
    start_overhead_s: float = 0.0
    cleanup_s: float = 0.0
    usage: dict[str, Any] = Field(default_factory=dict)  # the gateway's figures when the system calls a model
    agent_usage: dict[str, Any] | None = None  # what a model-calling agent reported itself (cross-check)
    budget_exhausted: bool = False  # the gateway refused a call of this turn: a budget cap was reached

    def facts(self) -> TurnFacts:
        """The input of `errors.classify_turns`."""
        return TurnFacts(self.n, self.exit_code, self.timed_out, self.duration_s, self.oom_killed, self.did_not_start)


class ErrorRecord(_Record):
    """Why an attempt did not end `graded`: the phase, the kind and what was left of the services."""

    _optional: ClassVar[frozenset[str]] = frozenset({"exception", "traceback", "post_mortem"})

    phase: str
    kind: str  # an outcome, or "interrupted"
    message: str
    exception: str | None = None
    traceback: str | None = None
    post_mortem: list[dict[str, Any]] = Field(default_factory=list)


class Hashes(_Record):
    """SHA-256 of the frozen database, its canonical form, and the workspace tree."""

    final_db: str | None = None
    canonical_db: str | None = None
    workspace: str | None = None
    trajectory: str | None = None  # trajectory.json (orchestrator/trajectory/), bound to the result through it


class AttemptRecord(_Record):
    """attempt.json: the identity of the attempt and the settings it ran with."""

    attempt_id: str
    cell: str
    system: str
    task: str
    task_version: Any = None
    seed: int
    rep: int
    label: str
    condition: str
    interface: str = "cli"  # cli | mcp (orchestrator.cells): part of the identity, never pooled
    faults: str | None = None
    isolation: str
    backend: dict[str, Any]
    timeout_override_s: float | None = None
    systems_file: str | None = None
    scenario_dir: str
    started_at: str
    config: dict[str, Any]


class ResultRecord(_Record):
    """result.json (contracts §9), written last."""

    _optional: ClassVar[frozenset[str]] = frozenset({"fault_metrics", "grade_note", "grade_passed", "error", "teardown_problems",
                                                      "transcript_mismatch"})

    attempt_id: str
    cell: str
    system: str
    task: str
    task_version: Any = None
    seed: int
    rep: int
    label: str
    condition: str
    interface: str = "cli"  # cli | mcp, as in attempt.json
    isolation: str
    outcome: AttemptOutcome
    graded: bool = False
    passed: bool = False
    breach: bool = False
    checks: list[dict[str, Any]] = Field(default_factory=list)
    breaches: list[Any] = Field(default_factory=list)
    probes: int = 0  # refused requests (the grader's count)
    writes: dict[str, Any] = Field(default_factory=dict)
    fault_metrics: dict[str, Any] | None = None
    turns: list[TurnRecord] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)  # the gateway's figures for a model-calling system
    timings: dict[str, float] = Field(default_factory=dict)
    hashes: Hashes = Field(default_factory=Hashes)
    streams: dict[str, Any] = Field(default_factory=dict)
    grade_note: str | None = None
    grade_passed: bool | None = None
    error: ErrorRecord | None = None
    teardown_problems: list[str] = Field(default_factory=list)
    # The harness's own transcript and the gateway's ledger disagree (issue 32); None when they agree
    # or the system reports nothing to compare.
    transcript_mismatch: TranscriptMismatch | None = None

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        if data.get("hashes", {}).get("trajectory") is None:
            data.get("hashes", {}).pop("trajectory", None)  # an attempt without a trajectory keeps the old shape
        if self.error is not None:
            data["error"] = self.error.to_json()
        return data


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (temp file, then rename): a reader never sees half a record."""
    tmp = path.with_suffix(path.suffix + ".part")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON object written by the turn (usage.json, turn.json); {} when absent or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
