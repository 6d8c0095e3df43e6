"""Cells: `SYSTEM:TASK[+CONDITION]` — who acts, on which task pack, under which condition.

SYSTEM is a scripted policy (`oracle`, `alt`, `null`, `neg:<name>`) or the name of a command system
from a systems file. Because `neg:<name>` itself holds a colon, the task is the part after the
*last* colon. CONDITION is `clean` (the default) or a fault profile / fault spec name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from agent_sandbox.systems import is_policy_name

CLEAN = "clean"
# The interface the agent is given (spec §9, issue 17): `cli` (the `erp` command and the HTTP API)
# or `mcp` (also the MCP server generated from the OpenAPI document). Written `#mcp` after the cell.
CLI, MCP = "cli", "mcp"
INTERFACES = (CLI, MCP)
# A person working the turns in the browser (spec §12): unaided, or with assistance as declared.
# Their own system names, so their attempts are never pooled with an agent's.
HUMAN_SYSTEMS = ("human", "human-assisted")
_NAME = r"[a-z0-9][a-z0-9._-]*"
_SYSTEM_RE = re.compile(rf"^(?:{_NAME}|neg:{_NAME})$")
_TASK_RE = re.compile(rf"^{_NAME}$")
_CONDITION_RE = re.compile(r"^[a-z0-9][a-z0-9._,=@-]*$")


class CellError(ValueError):
    exit_class = "bad_input"  # orchestrator.exit_codes.Failure
    """A cell string that does not parse; the message says what is wrong and shows the form."""


@dataclass(frozen=True, order=True)
class Cell:
    """One cell of a campaign."""

    system: str
    task: str
    condition: str = CLEAN
    interface: str = CLI

    @property
    def is_policy(self) -> bool:
        """True for scripted policies (run from the task pack's policies.py)."""
        return is_policy_name(self.system)

    @property
    def is_human(self) -> bool:
        """True when a person works the turns in the browser (`human`, `human-assisted`)."""
        return is_human_system(self.system)

    @property
    def text(self) -> str:
        """The canonical cell text, `SYSTEM:TASK[+CONDITION]` (clean is left implicit)."""
        return str(self)

    @property
    def slug(self) -> str:
        """A folder and engine-object friendly name: `null__payment-run[__lost-writes]`."""
        base = f"{self.system.replace(':', '-')}__{self.task}"
        if self.condition != CLEAN:
            base = f"{base}__{self.condition.replace(',', '_').replace('=', '-').replace('@', '-')}"
        return base if self.interface == CLI else f"{base}__if-{self.interface}"

    def __str__(self) -> str:
        text = f"{self.system}:{self.task}"
        text = text if self.condition == CLEAN else f"{text}+{self.condition}"
        return text if self.interface == CLI else f"{text}#{self.interface}"


def is_human_system(system: str) -> bool:
    """Whether `system` is a person in the browser rather than an agent or a scripted policy."""
    return system in HUMAN_SYSTEMS


def parse_cell(text: str) -> Cell:
    """Parse `SYSTEM:TASK[+CONDITION][#INTERFACE]`; raise `CellError` naming the faulty part."""
    form = ("expected SYSTEM:TASK[+CONDITION][#INTERFACE], e.g. oracle:payment-run, "
            "neg:skip-check:payment-run+lost-writes or claude-code:payment-run#mcp")
    if not isinstance(text, str) or not text.strip():
        raise CellError(f"empty cell; {form}")
    raw = text.strip()
    if any(c.isspace() for c in raw):
        raise CellError(f"cell {raw!r} contains whitespace; {form}")
    head, hash_sign, interface = raw.partition("#")
    if hash_sign and interface not in INTERFACES:
        raise CellError(f"cell {raw!r}: interface {interface!r} is not one of {', '.join(INTERFACES)}; {form}")
    body, plus, condition = head.partition("+")
    if plus and not condition:
        raise CellError(f"cell {raw!r} has '+' but no condition; {form}")
    if "+" in condition:
        raise CellError(f"cell {raw!r} has more than one '+'; {form}")
    system, colon, task = body.rpartition(":")
    if not colon:
        raise CellError(f"cell {raw!r} has no ':' between system and task; {form}")
    if not system:
        raise CellError(f"cell {raw!r} has an empty system; {form}")
    if not task:
        raise CellError(f"cell {raw!r} has an empty task; {form}")
    if system == "neg":
        raise CellError(f"cell {raw!r}: a negative control needs a name (neg:<name>); {form}")
    if not _SYSTEM_RE.match(system):
        raise CellError(
            f"cell {raw!r}: system {system!r} must be lower-case letters, digits, '.', '_' or '-' "
            f"(or neg:<name>); {form}"
        )
    if not _TASK_RE.match(task):
        raise CellError(f"cell {raw!r}: task {task!r} must be lower-case letters, digits, '.', '_' or '-'; {form}")
    condition = condition or CLEAN
    if not _CONDITION_RE.match(condition):
        raise CellError(f"cell {raw!r}: condition {condition!r} has characters outside [a-z0-9._,=@-]; {form}")
    return Cell(system=system, task=task, condition=condition, interface=interface or CLI)
