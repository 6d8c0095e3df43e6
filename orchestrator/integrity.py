"""Who caused it: the facts the runtime trusts when it decides `agent_error` vs `infra_error`.

An infrastructure error is retried and left out of every rate, so anything the agent can make
look like one is a loophole. The rule here: the outcome is decided only from facts the agent
cannot write — the container's state as the engine reports it (exit code, OOM flag), the
engine's own events (who killed a container), and the runtime's own records — never from what
the agent's turn left in its folders (out/traceback.txt, usage.json, turn.json: the agent
controls the container that writes them).

- Any exit code of a turn is the agent's, 125 included (the contract's "the turn could not be
  set up" is the entrypoint's claim, written inside the agent's container). The runtime checks
  its own turn inputs before it starts a turn instead.
- A process of the turn killed for memory while the turn itself exited 0 in time is recorded
  on the turn; the work is graded. An OOM that ended the turn (non-zero exit) is the agent's.
- A service (the ERP) that died during a turn is the agent's doing — its requests were the
  only traffic on the agent API — unless the engine's events show the container was killed or
  stopped through the engine's API (an operator, a test, a dying host): that is infrastructure.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.errors import AttemptError, AttemptOutcome

#: Engine event actions that mean "ended from outside, through the engine's API".
EXTERNAL_END_ACTIONS = frozenset({"kill", "stop", "pause", "destroy"})


@dataclass(frozen=True)
class ServiceDeath:
    """How a service container ended, from the engine: its state and its events."""

    service: str
    exit_code: int | None
    oom_killed: bool
    external: tuple[str, ...] = ()   # engine events that ended it from outside, e.g. "kill signal=9"
    events: tuple[str, ...] = field(default=())  # every event action seen, in order

    @classmethod
    def from_engine(cls, service: str, state: Mapping[str, Any] | None, events: Iterable[Mapping[str, Any]]) -> ServiceDeath:
        """From a container's `State` and the engine's events for it (decoded JSON dicts)."""
        state = state or {}
        actions: list[str] = []
        external: list[str] = []
        for ev in events:
            action = str(ev.get("Action") or ev.get("status") or "")
            attrs = (ev.get("Actor") or {}).get("Attributes") or {}
            actions.append(action)
            verb = action.split(":", 1)[0]
            if verb in EXTERNAL_END_ACTIONS:
                signal = attrs.get("signal")
                external.append(f"{verb} signal={signal}" if signal else verb)
        return cls(service, state.get("ExitCode"), bool(state.get("OOMKilled")) or "oom" in actions,
                   tuple(external), tuple(actions))

    @property
    def agents_doing(self) -> bool:
        """True unless the engine ended the container from outside."""
        return not self.external

    def _verbs(self) -> list[str]:
        """The event actions without their details (an exec's command line), in order."""
        return [action.split(":", 1)[0] for action in self.events]

    def reason(self, turn: int) -> str:
        """One sentence for the record."""
        how = "ran out of memory" if self.oom_killed else f"exited with code {self.exit_code}"
        if self.agents_doing:
            return (f"the {self.service} died during turn {turn}, after the agent's requests: it {how}, "
                    f"and nothing outside ended it (engine events: {', '.join(self._verbs()) or 'none'})")
        return f"the {self.service} was {', '.join(self.external)} from outside during turn {turn} (it {how})"


@dataclass(frozen=True)
class TurnState:
    """What the engine says about a finished turn container."""

    exit_code: int | None
    oom_killed: bool
    timed_out: bool


def memory_note(turn: TurnState) -> str | None:
    """The note for a turn in which a process was killed for memory but the turn ended
    normally (exit 0, in time): recorded on the turn, not an agent error. None otherwise."""
    if turn.oom_killed and turn.exit_code == 0 and not turn.timed_out:
        return "a process of the turn was killed for memory; the turn itself exited 0 in time"
    return None


def counts_as_oom_failure(turn: TurnState) -> bool:
    """An OOM kill is the agent's failure only when it ended the turn abnormally."""
    return turn.oom_killed and memory_note(turn) is None


class AgentCausedError(AttemptError):
    """The agent's own act ended the attempt early (a service it crashed through its requests):
    `agent_error`, never retried as infrastructure."""

    kind: AttemptOutcome = "agent_error"
