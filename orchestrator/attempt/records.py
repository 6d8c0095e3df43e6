"""The typed records of one attempt (contracts §9): what it runs, each turn, and its result.

`AttemptSpec` is the input (contracts §10); `AttemptRecord` is attempt.json (identity, written
once the inputs are resolved), `TurnRecord` one line of turns.jsonl and one entry of the result's
`turns`, `ResultRecord` is result.json (written last). The records serialise with `to_json()`,
which leaves out the optional keys that are unset, as the contract's `key?` says.

attempt.json and result.json embed the attempt's `AttemptIdentity` (orchestrator/identity.py) and
write it flat, as contracts §9 lists the keys: `attempt_id` (the identity's), `cell`, `task`,
`system`, `condition`, `interface`, `seed`, `rep`, `task_version`, beside `run_id` (this try) and
`schema`. Schema 1 records (before the identity was embedded: `attempt_id` was the try's id, no
`run_id`, `task_version` a number) still read.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from orchestrator.attempt.adapter_record import AdapterSettings
from orchestrator.cells import Cell
from orchestrator.errors import AttemptOutcome, TurnFacts
from orchestrator.identity import AttemptIdentity
from orchestrator.trajectory.mismatch import TranscriptMismatch

# 2: the identity embedded (attempt_id is the identity's; the try's id is run_id; task_version text).
RECORD_SCHEMA = 2
_IDENTITY_KEYS = ("task", "system", "condition", "interface", "seed", "rep", "task_version")


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

    _optional: ClassVar[frozenset[str]] = frozenset({"adapter"})

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
    adapter: AdapterSettings | None = None  # a command system's harness, model, effort, limits (set on the host)

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


class _IdentifiedRecord(_Record):
    """A record of one try of an attempt: its identity, written flat (see the module docstring)."""

    identity: AttemptIdentity
    run_id: str  # this try (AttemptIdentity.new_run_id); the attempt's id is the identity's
    label: str

    @property
    def attempt_id(self) -> str:
        """The attempt's id (`AttemptIdentity.attempt_id`), the same for every try."""
        return self.identity.attempt_id

    @model_validator(mode="before")
    @classmethod
    def _read_flat(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "identity" in data:
            return data
        data = dict(data)
        schema = data.pop("schema", 1)
        ident = AttemptIdentity.from_dict({k: data.pop(k) for k in _IDENTITY_KEYS if k in data})
        data.pop("cell", None)  # the identity's cell text
        written_id = data.pop("attempt_id", None)
        if schema == 1:
            data.setdefault("run_id", written_id)  # schema 1: attempt_id was the try's id
        elif written_id != ident.attempt_id:
            raise ValueError(f"attempt_id {written_id!r} is not the id of the identity it records ({ident.attempt_id})")
        data["identity"] = ident
        return data

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        data.pop("identity")
        data.update({k: v for k, v in self.identity.model_dump(mode="json").items()})
        data.update(schema=RECORD_SCHEMA, attempt_id=self.attempt_id, cell=self.identity.cell.text)
        return data


class AttemptRecord(_IdentifiedRecord):
    """attempt.json: the identity of the attempt and the settings it ran with."""

    _optional: ClassVar[frozenset[str]] = frozenset({"adapter"})

    faults: str | None = None
    isolation: str
    backend: dict[str, Any]
    timeout_override_s: float | None = None
    systems_file: str | None = None
    scenario_dir: str
    started_at: str
    config: dict[str, Any]
    adapter: AdapterSettings | None = None  # a command system's harness, version, model, effort and limits


class ResultRecord(_IdentifiedRecord):
    """result.json (contracts §9), written last; also written by the campaign for a try that
    never reached a result of its own (`written_by: "campaign"`, no isolation)."""

    _optional: ClassVar[frozenset[str]] = frozenset(
        {"fault_metrics", "grade_note", "grade_passed", "error", "teardown_problems", "written_by", "rescored_from",
         "transcript_mismatch"})

    isolation: str | None
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
    written_by: str | None = None  # "campaign": the attempt job raised, or the scenario could not be built
    # The harness's own transcript and the gateway's usage log disagree (issue 32); None when they agree
    # or the system reports nothing to compare.
    transcript_mismatch: TranscriptMismatch | None = None
    # A rescored attempt (orchestrator/regrade/): the source label, attempt id and result.json SHA-256.
    rescored_from: dict[str, Any] | None = None

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
