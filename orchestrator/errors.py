"""Typed attempt errors and the pure decision `agent_error` vs `infra_error`.

An attempt ends in one of four outcomes (contracts §9):

* `graded`      — the infrastructure worked and every turn of the agent ran and exited 0 in time;
* `agent_error` — the harness crashed (non-zero exit, did not start) or ran out of time on a
                  turn; scored as the agent's failure, but the final state is still graded;
* `infra_error` — a daemon call failed, a container would not start or died, the ERP became
                  unhealthy or ran out of memory, the host side failed. Never scored as the
                  agent's failure; the campaign retries it.
* `task_error`  — the task pack or its scenario is broken (a scenario without a grading date, a
                  policies module that is missing, a check that raises): never retried (it
                  would fail again), never scored as infra or as the agent's failure.

Any exit code of a turn is the agent's, 125 with out/traceback.txt included: both are written
inside the agent's container, so they are the agent's claims, not facts (orchestrator.integrity).

Nothing here talks to Docker or the network: `classify_exception` and `classify_turns` are
pure functions of their inputs, so the policy is tested without containers.
"""
from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

AttemptOutcome = Literal["graded", "agent_error", "infra_error", "task_error"]


class Phase(str, enum.Enum):
    """Where in the lifecycle something happened (one method of the attempt runner each)."""

    RESOLVE = "resolve"  # the cell against the task pack, the systems file and the scenario
    OPEN = "open"  # the backend prepared, the sandbox opened (networks, volumes)
    SERVICES = "services"  # the ERP (and later services) started and healthy, handbook in
    TURN = "turn"  # clock advance and the agent container of one turn
    FREEZE = "freeze"  # grading-date advance, flush, drain, snapshot, workspace copy
    GRADE = "grade"  # the grader on the host
    TEARDOWN = "teardown"


@dataclass
class PostMortem:
    """What was left of a dead or failing container (or process)."""

    name: str
    status: str | None = None
    exit_code: int | None = None
    oom_killed: bool | None = None
    error: str | None = None
    last_logs: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "exit_code": self.exit_code,
            "oom_killed": self.oom_killed,
            "error": self.error,
            "last_logs": self.last_logs,
        }


class AttemptError(Exception):
    """Base of the runtime's own errors; carries the phase and optional post-mortems."""

    kind: AttemptOutcome = "infra_error"

    def __init__(self, message: str, *, phase: Phase | None = None, post_mortems: Iterable[PostMortem] = ()):
        super().__init__(message)
        self.phase = phase
        self.post_mortems = list(post_mortems)


class InfraError(AttemptError):
    """The infrastructure failed: the attempt says nothing about the agent."""

    kind: AttemptOutcome = "infra_error"


class EngineError(InfraError):
    """A container-engine (daemon) call failed."""


class ContainerStartError(InfraError):
    """A container could not be created or started."""


class KeeperLost(InfraError):
    """An idle container the attempt's files depend on (the agent side's holder, which keeps the
    workspace's and the declared turns' volumes and the network namespace: agent_holder.py; an
    undeclared turn's keeper: volume_quota.py) is no longer running. A quota volume's files live only
    while a container holds it mounted, so they are gone; the agent cannot reach these
    containers, so this is never the agent's doing."""


class ServiceUnhealthy(InfraError):
    """A service of the sandbox did not become healthy, died, or failed a call it should accept."""


class ErpUnhealthy(ServiceUnhealthy):
    """The ERP did not become healthy, died, or refused a control call it should accept."""


class TaskError(AttemptError):
    """The task pack or its scenario is broken: the attempt says nothing about agent or infra."""

    kind: AttemptOutcome = "task_error"
    exit_class = "task_error"  # orchestrator.exit_codes.Failure
    exit_prefix = "task error: "


class ConfigError(ValueError):
    """Bad input from the user (cell, systems file, options): reported, never retried."""

    exit_class = "bad_input"  # orchestrator.exit_codes.Failure


def classify_exception(exc: BaseException) -> AttemptOutcome:
    """Outcome for an exception that ended an attempt early.

    The runtime's own errors know their kind. Everything else — engine and HTTP client errors,
    OS errors on the host, and any unexpected bug of ours — is infrastructure: an exception that
    escapes the lifecycle never blames the agent. (Agent failures are not exceptions; they are
    turn records, see `classify_turns`.)
    """
    if isinstance(exc, AttemptError):
        return exc.kind
    return "infra_error"


@dataclass(frozen=True)
class TurnFacts:
    """What the runtime observed about one agent turn (input of `classify_turns`)."""

    n: int
    exit_code: int | None
    timed_out: bool
    duration_s: float
    oom_killed: bool = False
    did_not_start: bool = False


@dataclass
class TurnsVerdict:
    """The agent's share of the outcome: `ok`, or an agent error with the reason."""

    outcome: AttemptOutcome
    reasons: list[str] = field(default_factory=list)


def turn_problem(turn: TurnFacts) -> str | None:
    """Why a turn counts as an agent error, or None when it ran cleanly."""
    if turn.did_not_start:
        return f"turn {turn.n}: the harness did not start (exit {turn.exit_code})"
    if turn.timed_out:
        return f"turn {turn.n}: ran out of time after {turn.duration_s:.1f}s and was killed"
    if turn.oom_killed and turn.exit_code != 0:
        # A process killed for memory while the turn still exited 0 is a note on the turn
        # (orchestrator.integrity.memory_note), not a failure: the work is graded.
        return f"turn {turn.n}: the agent container ran out of memory (exit {turn.exit_code})"
    if turn.exit_code != 0:
        return f"turn {turn.n}: the harness exited with code {turn.exit_code}"
    return None


def classify_turns(turns: Iterable[TurnFacts]) -> TurnsVerdict:
    """`graded` when every turn exited 0 in time, else `agent_error` with one reason per turn.

    An OOM kill of the *agent* container is the agent's doing (it is contained by its limits);
    a dead ERP is judged from the engine's facts (orchestrator.integrity.ServiceDeath).
    """
    reasons = [r for r in (turn_problem(t) for t in turns) if r]
    return TurnsVerdict("agent_error" if reasons else "graded", reasons)


def did_not_start(exit_code: int | None, duration_s: float, threshold_s: float) -> bool:
    """Shell convention: 126 (not executable) / 127 (not found) right away = never started."""
    return exit_code in (126, 127) and duration_s < threshold_s
